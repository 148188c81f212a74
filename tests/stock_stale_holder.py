"""Two holders of one goods id's lock, interleaved for real: a stale holder (one whose session
ended while it paused: its token is older than the next holder's) reads, stalls after its
read, and commits after a newer holder has acquired the same lock and written; it must be
refused, nothing written, whatever its plan writes or does not write.

The stale holder's token is a real one: taken from the app's own lock service (acquired and
let go at once, as a holder whose session expired), so every holder after it, the app's
included, has a newer one. Its hold is stock_service.deduction.decide.decide_batch called directly
with that token, paused at the hold's own pause point (`stop_after_read`), where the newer
holder's whole step runs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from coordination.locks import Lease, LockBackend, LockLost
from stock_service.core.model import Decision, Kind, Request
from stock_service.deduction.decide import decide_batch
from stock_service.storage.store import StockStore
from stock_service.storage.tables import stock
from tests.helpers import PauseAt
from tests.stock_world import read_world


def stale_token(locks: LockBackend, goods_id: str) -> int:
    """A token a holder had and lost: acquired, then let go before it is used."""
    with locks.hold([goods_id], timeout=20) as lease:
        token = lease.token_for(goods_id)
    assert token is not None, "the lock backend gives no fencing token"
    return token


def stale_return(store: StockStore, flag: str) -> Request:
    """The return of a deducted flag, built as StockDeduction.cancel builds it."""
    lines, parts, backordered = store.returning(flag)
    return Request(flag, lines, Kind.RETURN, parts=parts, backorder=backordered)


def fingerprint(engine: sa.Engine, goods_ids: list[str], flags: list[str]) -> str:
    """Every row of these goods ids and flags, as text: equal before and after a step that
    wrote nothing."""
    world = read_world(engine, goods_ids, flags)
    tables: list[Any] = [
        world.flows,
        world.returns,
        world.adjustments,
        world.transfers,
        world.legs,
        world.lines,
        world.fills,
    ]
    rows = [sorted(map(repr, map(tuple, t))) for t in tables]
    rows.append(sorted(repr(tuple(r)) for r in world.stock.values()))
    rows.append(sorted(repr(tuple(r)) for r in world.decisions.values()))
    rows.append(sorted(repr(tuple(r)) for n in world.named.values() for r in n.values()))
    return repr(rows)


def fences(engine: sa.Engine, goods_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
    with engine.connect() as conn:
        query = sa.select(stock.c.goods_id, stock.c.fence, stock.c.ledger_seq)
        rows = conn.execute(query.where(stock.c.goods_id.in_(list(goods_ids))))
        return {r.goods_id: (int(r.fence), int(r.ledger_seq)) for r in rows}


@dataclass
class StaleRun:
    refused: bool  # the stale hold raised LockLost
    decisions: list[Decision] | None  # what it decided, when it committed
    overtaken: bool  # the newer holder wrote a row the stale hold read, after its read
    wrote: bool  # the stale hold changed a row after the newer holder's step

    def __str__(self) -> str:
        said = "refused (LockLost)" if self.refused else f"committed {self.decisions}"
        return f"stale hold {said}; overtaken {self.overtaken}; wrote {self.wrote}"


def run_stale(
    engine: sa.Engine,
    store: StockStore,
    locks: LockBackend,
    request: Request,
    meanwhile: Callable[[], object],
    flags: list[str],
) -> StaleRun:
    """`request` held with a stale token per goods id; `meanwhile` (the newer holder's step,
    through the app) runs after its read. `flags`: the flags whose rows count as written."""
    goods_ids = sorted(request.lines)
    tokens: dict[str, int | None] = {g: stale_token(locks, g) for g in goods_ids}
    seen: dict[str, Any] = {}

    def newer_holder() -> None:
        seen["before"] = fences(engine, goods_ids)
        meanwhile()
        seen["after"] = fences(engine, goods_ids)
        seen["rows"] = fingerprint(engine, goods_ids, flags)

    pause = PauseAt("stop_after_read", newer_holder)
    try:
        decisions: list[Decision] | None = decide_batch(
            store, [request], Lease(tokens=tokens), fencing=True, faults=pause
        )
        refused = False
    except LockLost:
        decisions, refused = None, True
    assert "rows" in seen, "the stale hold never reached its pause after the read"
    overtaken = seen["before"] != seen["after"]
    wrote = fingerprint(engine, goods_ids, flags) != seen["rows"]
    return StaleRun(refused, decisions, overtaken, wrote)
