"""What a run with the `slow-first-attempts` fault (slow_attempts.py) counts of the story it
makes: how often it was lined up, from the history and the databases.

What the run counts (`LA`, a figure like LS, judged by H2, I3 and I9): the attempts held;
the orders refused while their first attempt was still held (answered 409 insufficient_stock
at least STOCK_CALL_TIMEOUT after their send, and before DELAY had passed: the held attempt
was still asleep); the returns to the scarce goods in the window (the stock database's return
rows, each a cancel's or an expiry's, and the cancels the history was answered); and, for each
order refused while held, whether its late attempt reached the lock with its stock back on
the shelf: the level of each of its goods at that moment, rebuilt from the seeded level and
the times of every flow and return. Those are the orders the rule before refusals were
recorded sold to a buyer told no; with the refusal recorded, none of them has a flow.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, select

from inventory.chaos.history import FAIL, Op
from inventory.chaos.slow_attempts import CALL_TIMEOUT, DELAY
from inventory.chaos.verdict import COUNTED, UNKNOWN, Verdict
from order_service.core.statuses import HOLD_EXPIRED
from order_service.storage.tables import orders
from stock_service.storage.tables import flag_decision, stock_adjustment, stock_flow, stock_return


def _first_sends(ops: Sequence[Op]) -> dict[str, Op]:
    firsts: dict[str, Op] = {}
    for op in ops:
        if op.kind == "order" and (op.key not in firsts or op.invoke < firsts[op.key].invoke):
            firsts[op.key] = op
    return firsts


def refused_while_held(
    ops: Sequence[Op], scarce: Sequence[str], start: float, end: float
) -> dict[str, Op]:
    """Order id -> the first send of each order of the scarce goods first sent in [start, end)
    that was refused while its first attempt was still held: its 409 insufficient_stock came
    at least CALL_TIMEOUT after the send (the first attempt was given up on), and before DELAY
    had passed (a held attempt was still asleep)."""
    firsts = _first_sends(ops)
    found: dict[str, Op] = {}
    for op in ops:
        first = firsts.get(op.key)
        if op.kind != "order" or op.outcome != FAIL or first is None or not op.order_id:
            continue
        if not start <= first.invoke < end or not any(g in scarce for g in op.lines):
            continue
        if CALL_TIMEOUT <= op.complete - first.invoke < DELAY:
            found[op.order_id] = first
    return found


Dated = dict[str, list[tuple[datetime, int]]]  # goods id -> (when, units)


def level_at(
    goods: str,
    at: datetime,
    initial: dict[str, int],
    flows: Dated,
    returns: Dated,
    adjusted: Dated | None = None,
) -> int:
    """The level of `goods` at `at`: seeded, less the flows, plus the returns and the
    adjustments after the seed (the story's emptying and restocking, by their deltas), written
    by then."""
    taken = sum(n for t, n in flows.get(goods, []) if t <= at)
    back = sum(n for t, n in returns.get(goods, []) if t <= at)
    moved = sum(n for t, n in (adjusted or {}).get(goods, []) if t <= at)
    return initial[goods] - taken + back + moved


def exercised(numbers: dict[str, Any]) -> str:
    """The LA verdict of a window: counted when at least one late attempt reached the lock with
    its stock back on the shelf after its order was refused (I9 was put to the test, and judged
    by I9, H2 and I3); unknown when none did: the run could not exercise I9 and says so."""
    return COUNTED if numbers["back_on_shelf"] else UNKNOWN


def _rows(engine: Engine, table: Any, goods: Sequence[str]) -> dict[str, list[tuple[Any, ...]]]:
    found: dict[str, list[tuple[Any, ...]]] = {}
    with engine.connect() as conn:
        for r in conn.execute(
            select(table.c.goods_id, table.c.created_at, table.c.num, table.c.flag).where(
                table.c.goods_id.in_(list(goods))
            )
        ):
            found.setdefault(r.goods_id, []).append((r.created_at, int(r.num), r.flag))
    return found


def count_story(
    ops: Sequence[Op],
    start: float,
    heal: float,
    wall_start: datetime,
    scarce: Sequence[str],
    initial: dict[str, int],
    stock_engine: Engine,
    order_engine: Engine,
    held_in_window: int = 0,
) -> tuple[Verdict, dict[str, Any]]:
    """The story's figures for a window of the fault (start and heal in run seconds,
    `wall_start` the run's second 0 as the databases' clock reads it; `held_in_window`, the
    attempts the stock logs say were held, from the heal's note)."""

    def wall(seconds: float) -> datetime:
        return wall_start + timedelta(seconds=seconds)

    refused = refused_while_held(ops, scarce, start, heal)
    goods = sorted({g for op in refused.values() for g in op.lines} | set(scarce))
    flow_rows = _rows(stock_engine, stock_flow, goods)
    return_rows = _rows(stock_engine, stock_return, goods)
    flows = {g: [(t, n) for t, n, _ in rows] for g, rows in flow_rows.items()}
    returns = {g: [(t, n) for t, n, _ in rows] for g, rows in return_rows.items()}
    adjusted: Dated = {}
    with stock_engine.connect() as conn:
        for r in conn.execute(
            select(
                stock_adjustment.c.goods_id, stock_adjustment.c.created_at, stock_adjustment.c.delta
            ).where(
                stock_adjustment.c.goods_id.in_(goods), stock_adjustment.c.created_at >= wall(start)
            )
        ):
            adjusted.setdefault(r.goods_id, []).append((r.created_at, int(r.delta)))
    # Returns while the fault held and its last held attempts slept.
    until = wall(heal + DELAY)
    window = [
        (g, t, n, flag)
        for g, rows in return_rows.items()
        if g in scarce
        for t, n, flag in rows
        if wall(start) <= t <= until
    ]
    returned_flags = sorted({flag for *_, flag in window})
    with order_engine.connect() as conn:
        reasons = {
            r.id: r.reason or ""
            for r in conn.execute(
                select(orders.c.id, orders.c.reason).where(orders.c.id.in_(returned_flags))
            )
        }
    expired = sum(1 for f in returned_flags if reasons.get(f, "").startswith(HOLD_EXPIRED))
    cancels_told = sum(
        1
        for op in ops
        if op.kind == "cancel"
        and op.status == 200
        and op.order_status == "CANCELLED"
        and start <= op.invoke < heal + DELAY
        and any(g in scarce for g in op.lines)
    )
    # Each order refused while held: did its late attempt find its stock back on the shelf?
    back_on_shelf: list[str] = []
    returned_meanwhile: list[str] = []
    for order_id, first in refused.items():
        late = wall(first.invoke + DELAY)
        refused_at = wall(first.invoke + CALL_TIMEOUT)
        came_back = [  # a return, or the nemesis's restock
            t
            for g in first.lines
            if g in scarce
            for t, n in [*returns.get(g, []), *adjusted.get(g, [])]
            if n > 0
        ]
        if any(refused_at <= t <= late for t in came_back):
            returned_meanwhile.append(order_id)
        if all(
            level_at(g, late, initial, flows, returns, adjusted) >= n
            for g, n in first.lines.items()
        ):
            back_on_shelf.append(order_id)
    with stock_engine.connect() as conn:
        decided = Counter(
            r.outcome
            for r in conn.execute(
                select(flag_decision.c.outcome).where(flag_decision.c.flag.in_(list(refused)))
            )
        )
    deducted = sorted(
        {flag for rows in flow_rows.values() for _, _, flag in rows if flag in refused}
    )
    numbers = {
        "held": held_in_window,
        "refused_while_held": len(refused),
        "returns": len(window),
        "returned_units": sum(n for _, _, n, _ in window),
        "returns_expired": expired,
        "returns_cancelled": len(returned_flags) - expired,
        "cancels_told_200": cancels_told,
        "returned_while_held": len(returned_meanwhile),
        "back_on_shelf": len(back_on_shelf),
        "i9_exercised": len(back_on_shelf),  # refusals put to the test by stock back
        "decided": dict(decided),
        "late_deducted": deducted,
    }
    detail = (
        f"{held_in_window} attempts held {DELAY:g} s (stock logs); "
        f"{len(refused)} orders refused while their first attempt was held; "
        f"{len(window)} returns to the scarce goods in the window ({expired} holds expired, "
        f"{numbers['returns_cancelled']} cancelled; {cancels_told} cancels answered 200); "
        f"{len(returned_meanwhile)} of those orders saw a return on their goods while held, "
        f"{len(back_on_shelf)} late attempts reached the lock with their stock back on the "
        f"shelf (I9 exercised {len(back_on_shelf)} times); decisions of the refused flags: "
        f"{', '.join(f'{k} {v}' for k, v in sorted(decided.items())) or 'none'}; "
        f"{len(deducted)} late attempts deducted"
    )
    examples = [f"late attempt deducted: {o}" for o in deducted] + [
        f"stock back for {o}" for o in back_on_shelf
    ]
    if not back_on_shelf:
        detail = "I9 NOT exercised: no late attempt found its stock back; " + detail
    verdict = Verdict(
        "LA", "late first attempts after a refusal", exercised(numbers), detail, examples[:20]
    )
    return verdict, numbers
