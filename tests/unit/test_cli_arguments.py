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
    "demo double-submit --unfenced": ("--unfenced goes with the scenarios stale-holder", ""),
    "up --workers 0": ("--workers", "at least 1"),
    "reconcile": ("no stack to reconcile", "inventory up"),
    "reconcile --older-than -1": ("--older-than", "above 0"),
    "migrate": ("which order database?", "ORDER_DATABASE_URL"),
    "check": ("no databases", "--order-db"),
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
