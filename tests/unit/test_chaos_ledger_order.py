"""H4 and I8's order part judge commit order by the ledger's seq, not by `created_at`: in a
chaos run each stock host stamps rows with its own skewed clock (inventory/chaos/clocks.py),
so a row committed later can carry an earlier stamp. On a migrated SQLite stock database
(what the checks read, by hand)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Connection, Engine

import migrations
from inventory.chaos import checker
from inventory.chaos.ledger_checks import returns_out_of_order, with_returns_in_ledger_order
from shared.database.engines import make_engine
from stock_service.storage.tables import backorder_fill, stock, stock_flow, stock_return

T0 = datetime(2026, 1, 1)
AHEAD, BEHIND = timedelta(seconds=1.8), timedelta(seconds=-1.6)  # two stock hosts' clocks


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    url = f"sqlite:///{tmp_path / 'stock.db'}"
    migrations.upgrade(url, "stock")
    made = make_engine(url)
    yield made
    made.dispose()


def flow(conn: Connection, flag: str, goods: str, seq: int, fence: int, at: datetime) -> None:
    conn.execute(
        stock_flow.insert().values(
            id=f"f-{flag}-{goods}", flag=flag, goods_id=goods, num=1, seed_version=1,
            fence=fence, created_at=at, seq=seq,
        )
    )  # fmt: skip


def back(conn: Connection, flag: str, goods: str, seq: int, at: datetime) -> None:
    conn.execute(
        stock_return.insert().values(
            id=f"r-{flag}-{goods}", flag=flag, goods_id=goods, num=1, seed_version=1,
            created_at=at, seq=seq,
        )
    )  # fmt: skip


def test_h4_follows_the_ledger_when_hosts_stamp_out_of_order(engine: Engine) -> None:
    with engine.begin() as conn:
        for goods in ("p-ok", "p-back"):
            conn.execute(
                stock.insert().values(
                    goods_id=goods, num=0, seeded_num=3, seed_version=1, fence=30, updated_at=T0
                )
            )
        # p-ok: token 10 committed first by the host ahead, token 20 a second later by the
        # host behind, stamped 2.4 s earlier: in commit order, nothing goes back.
        flow(conn, "a", "p-ok", 1, 10, T0 + AHEAD)
        flow(conn, "b", "p-ok", 2, 20, T0 + timedelta(seconds=1) + BEHIND)
        # p-back: token 10 committed after token 20 (seq 2 after 1): a stale holder's write,
        # whatever the stamps say.
        flow(conn, "c", "p-back", 1, 20, T0 + AHEAD)
        flow(conn, "d", "p-back", 2, 10, T0 + timedelta(seconds=5))
    verdict = checker.fences_never_go_back(engine, "p-")
    assert verdict.verdict == checker.VIOLATED, verdict
    assert verdict.counterexamples == ["p-back: flow f-d-p-back token 10 after 20"]


def test_a_return_stamped_before_its_deduction_by_a_host_behind_is_in_order(
    engine: Engine,
) -> None:
    with engine.begin() as conn:
        flow(conn, "held", "g-1", 4, 1, T0 + AHEAD)  # deducted by the host ahead
        back(conn, "held", "g-1", 5, T0 + timedelta(seconds=0.2) + BEHIND)  # released at once
    assert returns_out_of_order(engine, "g-") == []


def test_a_return_before_its_deduction_in_the_ledger_or_of_nothing_taken_is_caught(
    engine: Engine,
) -> None:
    with engine.begin() as conn:
        back(conn, "late", "g-1", 3, T0 + timedelta(seconds=9))  # stamped after...
        flow(conn, "late", "g-1", 7, 1, T0)  # ...a deduction that came later in the ledger
        back(conn, "nothing", "g-1", 8, T0)
        conn.execute(  # a return of a hand-over (a backordered line cancelled) is in order
            backorder_fill.insert().values(
                id="h1", flag="waited", goods_id="g-1", num=1, seq=9, level_after=0,
                location="", created_at=T0,
            )
        )  # fmt: skip
        back(conn, "waited", "g-1", 10, T0)
    assert returns_out_of_order(engine, "g-") == [
        "late/g-1: deducted at seq 7, returned at seq 3",
        "nothing/g-1: returned at seq 8, never taken",
    ]
    i8 = checker.Verdict("I8", "returns undo exactly their deductions; holds expire", "valid", "ok")
    joined = with_returns_in_ledger_order(i8, engine, "g-")
    assert joined.verdict == checker.VIOLATED and len(joined.counterexamples) == 2
    assert "2 returns before their deduction in the ledger" in joined.detail


@pytest.mark.parametrize("returned_seq", [2, 0])
def test_the_runs_i8_judges_the_returns_order_by_the_ledger(
    tmp_path: Path, returned_seq: int
) -> None:
    """check_run: o1 deducted (seq 1) by a host ahead, returned by a host behind, stamped
    before its deduction; one I8 of the returns, valid when the return's seq is after the
    deduction's, violated when before."""
    from tests.unit.test_chaos_checker import _tombstone_databases, tombstone_history

    order_engine, stock_engine = _tombstone_databases(tmp_path)
    with stock_engine.begin() as conn:
        conn.execute(stock_flow.update().values(seq=1))
        back(conn, "o1", "p-g", returned_seq, datetime(2025, 12, 31))
    verdicts = checker.check_run(
        tombstone_history(), order_engine, stock_engine, "p-", {"p-g": 5}, checker.liveness(1, 60)
    )
    order_engine.dispose()
    stock_engine.dispose()
    [i8] = [v for v in verdicts if "before their deduction in the ledger" in v.detail]
    assert i8.check == "I8" and "returns undo" in i8.name
    if returned_seq == 2:
        assert i8.verdict == checker.VALID, i8
    else:
        assert i8.verdict == checker.VIOLATED, i8
        assert "o1/p-g: deducted at seq 1, returned at seq 0" in i8.counterexamples
