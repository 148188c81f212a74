"""The command line answers a user mistake with one line and exit 2, before it starts
anything (no stack, no server, no folder, no stray database file)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from inventory.cli import main

MISTAKES = {
    "loadtest --concurrency 0": ("--concurrency", "at least 1"),
    "loadtest --orders 0": ("--orders", "at least 1"),
    "loadtest --goods 0": ("--goods", "at least 1"),
    "loadtest --duplicates -0.5": ("--duplicates", "between 0 and 1"),
    "loadtest --duplicates 2": ("--duplicates", "between 0 and 1"),
    "loadtest --orders ten": ("--orders", "not a whole number"),
    "loadtest --goods 2 --items 3": ("--items 3", "more than --goods 2"),
    "loadtest --lock database": ("LOCK_BACKEND=database", "PostgreSQL or MySQL"),
    "seed =5": ("not GOODS=NUM", "e.g. g1=100"),
    "seed g1=99999999999": ("between 0 and 1000000000", "at most"),
    "seed g1=-5": ("between 0 and 1000000000", "cannot be negative"),
    "seed g1=5 g2=x": ("not GOODS=NUM: 'g2=x'", ""),
    "bench --rounds 0": ("--rounds", "at least 1"),
    "bench --database-url sqlite:///x.db": ("PostgreSQL or MySQL", ""),
    "demo herd --waiters 0": ("--waiters", "at least 1"),
    "demo herd --waiters 5 100000": ("--waiters", "at most 500, not 100000"),
    "demo double-submit --unfenced": ("--unfenced goes with the scenarios stale-holder", ""),
    "up --workers 0": ("--workers", "at least 1"),
    "reconcile": ("no stack to reconcile", "inventory up"),
    "reconcile --older-than -1": ("--older-than", "above 0"),
    "migrate": ("which order database?", "ORDER_DATABASE_URL"),
    "check": ("no databases", "--order-db"),
    # No stack is exit 2 for status as for seed, and each says where it looked.
    "status": ("no stack running: no state in", "stack.json (from INVENTORY_HOME)"),
    "status --json": ("no stack running: no state in", "stack.json (from INVENTORY_HOME)"),
    "seed g1=5": ("no stack running: no state in", "stack.json (from INVENTORY_HOME)"),
    "check --order-db sqlite:///a.db --stock-db sqlite:///b.db --initial g1": ("not GOODS=NUM", ""),
    "nonsense": ("invalid choice: 'nonsense'", ""),
}


@pytest.fixture
def nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No stack and no configured servers or databases; the working directory is empty."""
    monkeypatch.setenv("INVENTORY_HOME", str(tmp_path / "home"))
    for variable in (
        "ZK_HOSTS",
        "REDIS_URL",
        "ORDER_DATABASE_URL",
        "STOCK_DATABASE_URL",
        "STOCK_SERVICE_URL",
        "LOCK_BACKEND",
    ):
        monkeypatch.delenv(variable, raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


def run(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's errors
        return int(exc.code or 0)


@pytest.mark.parametrize("command", list(MISTAKES))
def test_a_mistake_is_one_line_and_exit_2(
    command: str, nowhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    temporary = set(Path(tempfile.gettempdir()).glob("inventory-*"))
    code = run(command.split())
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    for part in MISTAKES[command]:
        assert part in err, err
    assert "Traceback" not in out + err
    assert len(err.strip().splitlines()) == 1, err
    assert list(nowhere.iterdir()) == []  # no ./order.db, ./stock.db or anything else
    assert not (nowhere.parent / "home").exists()  # no stack was started
    assert set(Path(tempfile.gettempdir()).glob("inventory-*")) <= temporary


def test_up_with_a_database_lock_on_sqlite_starts_nothing(
    nowhere: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LOCK_BACKEND", "database")
    assert run(["up"]) == 2
    assert "needs a PostgreSQL or MySQL STOCK_DATABASE_URL" in capsys.readouterr().err
    assert not (nowhere.parent / "home").exists()


def test_help_shows_each_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["loadtest", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "concurrent buyers (default: 32)" in text
    assert "initial stock per goods id (default: 40)" in text


# Databases the command cannot use: one line naming the problem and the fix, exit 2,
# nothing started and no database file created, for each way a database can be given.
DATABASE_MISTAKES = {
    "check --order-db bogus:// --stock-db bogus://": ({}, "--order-db: 'bogus://' is not a"),
    "check --order-db sqlite:///none.db --stock-db sqlite:///none.db": (
        {},
        "no SQLite database at none.db",
    ),
    "check": (
        {"ORDER_DATABASE_URL": "sqlite:///o.db", "STOCK_DATABASE_URL": "sqlite:///s.db"},
        "ORDER_DATABASE_URL: no SQLite database at o.db",
    ),
    "bench --database-url foo://x": ({}, "--database-url: 'foo://x' is not a database URL"),
    "migrate": (
        # the order URL is fine: it must not be migrated (created) before the stock one is read
        {"ORDER_DATABASE_URL": "sqlite:///o.db", "STOCK_DATABASE_URL": "bogus://"},
        "STOCK_DATABASE_URL: 'bogus://' is not a database URL",
    ),
    "up": ({"ORDER_DATABASE_URL": "bogus://"}, "ORDER_DATABASE_URL: 'bogus://' is not a"),
    "reconcile": (
        {"ORDER_DATABASE_URL": "bogus://", "STOCK_SERVICE_URL": "http://127.0.0.1:1"},
        "ORDER_DATABASE_URL: 'bogus://' is not a",
    ),
}


@pytest.mark.parametrize("command", list(DATABASE_MISTAKES))
def test_a_database_it_cannot_use_is_one_line_and_exit_2(
    command: str,
    nowhere: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    env, expected = DATABASE_MISTAKES[command]
    for variable, value in env.items():
        monkeypatch.setenv(variable, value)
    code = run(command.split())
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert expected in err, err
    assert "inventory migrate" in err or "e.g. sqlite:///" in err, err  # the fix
    assert "Traceback" not in out + err
    assert len(err.strip().splitlines()) == 1, err
    assert list(nowhere.iterdir()) == []  # no database file created
    assert not (nowhere.parent / "home").exists()  # no stack was started


def test_check_on_a_database_never_migrated_says_to_migrate(
    nowhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import sqlite3

    sqlite3.connect(nowhere / "empty.db").close()  # reachable, and no tables
    url = "sqlite:///empty.db"
    code = run(["check", "--order-db", url, "--stock-db", url])
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert "--order-db: sqlite:///empty.db) has no orders, order_details tables" in err, err
    assert f"ORDER_DATABASE_URL={url} STOCK_DATABASE_URL={url} inventory migrate" in err, err
    assert "Traceback" not in out + err
    assert len(err.strip().splitlines()) == 1, err


def test_no_stack_says_it_looked_in_dot_inventory_of_this_folder(
    nowhere: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("INVENTORY_HOME")
    assert run(["status"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"no state in {nowhere.resolve() / '.inventory' / 'stack.json'}" in err, err
    assert "./.inventory of this folder" in err and "INVENTORY_HOME" in err, err


def test_status_json_does_not_print_the_admin_token(
    nowhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json
    import os

    from inventory.local import stack_state

    home = nowhere.parent / "home"
    home.mkdir()
    token = "secret-admin-token-of-this-stack"
    state = stack_state.StackState(
        home=str(home),
        order_url="http://127.0.0.1:1",
        stock_url="http://127.0.0.1:2",
        zk_hosts="127.0.0.1:3",
        redis_url="redis://127.0.0.1:4/0",
        order_database_url="sqlite:///o.db",
        stock_database_url="sqlite:///s.db",
        lock_backend="zookeeper",
        lock_scope="sku",
        pids={"order_service": os.getpid()},  # a live process: the stack counts as running
        admin_token=token,
    )
    stack_state.save_state(state)
    assert run(["status", "--json"]) == 0
    out = capsys.readouterr().out
    assert token not in out
    data = json.loads(out)
    assert data["admin_token"] == "***"
    assert data["admin_token_in"] == str(home / "stack.json")
    assert run(["status"]) == 0
    out = capsys.readouterr().out
    # rich wraps a long path at the console's width, even inside a word (pytest-xdist's
    # temporary paths are longer): the path is looked for with the whitespace taken out.
    assert token not in out and str(home / "stack.json") in "".join(out.split())
    assert json.loads((home / "stack.json").read_text())["admin_token"] == token  # still kept
