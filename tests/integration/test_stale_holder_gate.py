"""Every goods id a hold read passes the fenced gate in its commit, whatever its plan does to
it, on SQLite, PostgreSQL and MariaDB. A hold whose plan moves no level still writes rows that
rest on its read (a refusal's decision, a backordered line given up, the units owed): before
the gate, a stale holder's cancel of a backordered line that gave back nothing committed after
a newer holder had handed that line units, and the units were lost (owed below zero, the line
cancelled with units and no return).

The interleavings are played for real: a holder paused at the hold's own pause point (after
its read, before its write) while another holder runs a whole hold on the same database."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from coordination.locks import Lease, LockLost
from shared.database.engines import make_engine
from stock_service.core.plan import Adjustment, Kind, Outcome, Request
from stock_service.deduction.decide import decide_batch
from stock_service.storage.store import StockStore
from stock_service.storage.tables import (
    backorder,
    backorder_fill,
    flag_decision,
    stock,
    stock_return,
)
from tests.conftest import unique
from tests.helpers import PauseAt


@pytest.fixture
def engine(database_url: str) -> sa.Engine:
    return make_engine(database_url)


@pytest.fixture
def store(engine: sa.Engine) -> StockStore:
    return StockStore(engine)


def hold(store: StockStore, request: Request, token: int, faults: Any = None) -> Outcome:
    goods = sorted(request.lines)
    lease = Lease(tokens=dict.fromkeys(goods, token))
    if faults is None:
        [decision] = decide_batch(store, [request], lease, fencing=True)
    else:
        [decision] = decide_batch(store, [request], lease, fencing=True, faults=faults)
    return decision.outcome


def restock(store: StockStore, goods: str, units: int, token: int) -> Outcome:
    adjustment = Adjustment(goods, "restock", delta=units)
    return hold(store, Request(unique("adj"), {goods: 0}, Kind.ADJUST, adjust=adjustment), token)


def cancel(store: StockStore, flag: str, goods: str) -> Request:
    """A cancel of a backordered flag as the service builds it before its hold: its lines and
    parts read then (deduction.py's return)."""
    lines, parts, backordered = store.returning(flag)
    assert backordered
    return Request(flag, lines, Kind.RETURN, parts=parts, backorder=True)


def owing(store: StockStore, engine: sa.Engine, limit: int, wanted: int) -> tuple[str, str]:
    """A goods id with nothing on hand and a backorder limit, and a flag that owes `wanted`."""
    goods, flag = unique(), unique("flag")
    seed = Request(unique("adj"), {goods: 0}, Kind.ADJUST, adjust=Adjustment(goods, "set", num=0))
    assert hold(store, seed, 100) is Outcome.ADJUSTED
    with engine.begin() as conn:
        conn.execute(
            sa.update(stock).where(stock.c.goods_id == goods).values(backorder_limit=limit)
        )
    outcome = hold(store, Request(flag, {goods: wanted}, backorder=True), 100)
    assert outcome is Outcome.BACKORDERED
    return goods, flag


def state(engine: sa.Engine, goods: str, flag: str) -> dict[str, Any]:
    with engine.connect() as conn:
        row = conn.execute(sa.select(stock).where(stock.c.goods_id == goods)).one()
        line = conn.execute(
            sa.select(backorder.c.state, backorder.c.filled).where(backorder.c.flag == flag)
        ).one()
        handed = conn.execute(
            sa.select(sa.func.coalesce(sa.func.sum(backorder_fill.c.num), 0)).where(
                backorder_fill.c.goods_id == goods
            )
        ).scalar_one()
        back = conn.execute(
            sa.select(sa.func.coalesce(sa.func.sum(stock_return.c.num), 0)).where(
                stock_return.c.goods_id == goods
            )
        ).scalar_one()
        decided = conn.execute(
            sa.select(flag_decision.c.outcome).where(flag_decision.c.flag == flag)
        ).scalar_one()
    return {
        "level": int(row.num),
        "owed": int(row.owed),
        "line": (line.state, int(line.filled)),
        "handed": int(handed),
        "returned": int(back),
        "decided": decided,
    }


def test_a_stale_holder_s_give_up_after_a_newer_hand_over_writes_nothing(
    engine: sa.Engine, store: StockStore
) -> None:
    goods, flag = owing(store, engine, limit=5, wanted=3)
    giving_up = cancel(store, flag, goods)
    # The stale holder (token 150) reads the cancel's state (the line waiting, nothing
    # handed: it would give back nothing and give up the place) and pauses; a newer holder
    # (token 200) restocks 2, handed to the line in its commit.
    pause = PauseAt("stop_after_read", lambda: restock(store, goods, 2, 200))
    with pytest.raises(LockLost, match="newer lock holder"):
        hold(store, giving_up, 150, pause)
    # Nothing of the stale give-up landed: the line still waits with its 2 units, owing 1.
    after = state(engine, goods, flag)
    assert after == {
        "level": 0,
        "owed": 1,
        "line": ("waiting", 2),
        "handed": 2,
        "returned": 0,
        "decided": "deducted",
    }, "the stale give-up committed over the newer hand-over"
    # A current holder's cancel gives back the 2 units the line was handed.
    assert hold(store, cancel(store, flag, goods), 300) is Outcome.RETURNED
    after = state(engine, goods, flag)
    assert (after["level"], after["owed"], after["returned"]) == (2, 0, 2)
    assert after["line"] == ("cancelled", 2)


def test_a_stale_holder_s_refusal_after_a_newer_restock_writes_nothing(
    engine: sa.Engine, store: StockStore
) -> None:
    """A refusal writes only its decision, yet that decision rests on the level read: a stale
    holder that read 0 and refuses after a newer holder restocked would tell a buyer no while
    the units were there."""
    goods = unique()
    seed = Request(unique("adj"), {goods: 0}, Kind.ADJUST, adjust=Adjustment(goods, "set", num=0))
    assert hold(store, seed, 100) is Outcome.ADJUSTED
    flag = unique("flag")
    pause = PauseAt("stop_after_read", lambda: restock(store, goods, 5, 200))
    with pytest.raises(LockLost, match="newer lock holder"):
        hold(store, Request(flag, {goods: 1}), 150, pause)
    assert store.decision(flag) is None, "a stale holder's refusal was recorded"
    assert hold(store, Request(flag, {goods: 1}), 300) is Outcome.DEDUCTED


def test_a_cancel_reads_what_its_line_was_handed_in_the_hold_s_own_read(
    engine: sa.Engine, store: StockStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hand-over committed after the cancel's hold began but before its read of the levels
    (a holder that read before this one acquired, and writes in that moment) must be seen by
    the cancel: its lines are read in the same read as the levels, after them, so the units
    handed come back with it."""
    goods, flag = owing(store, engine, limit=5, wanted=3)
    giving_up = cancel(store, flag, goods)
    read_batch = store.read_batch
    calls: list[int] = []

    def hand_over_then_read(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:  # the restock's own hold reads through here too
            assert restock(store, goods, 2, 250) is Outcome.ADJUSTED
        return read_batch(*args, **kwargs)

    monkeypatch.setattr(store, "read_batch", hand_over_then_read)
    assert hold(store, giving_up, 300) is Outcome.RETURNED
    after = state(engine, goods, flag)
    assert after["line"] == ("cancelled", 2)
    assert (after["level"], after["owed"], after["returned"]) == (2, 0, 2), (
        "the units handed to the line stayed with the cancelled order"
    )
