"""The chaos run's verdicts: the design's invariants read from the databases (inventory.check),
and what the history adds: what the client was told must be what the databases say.

H1 every order answered 200 is CONFIRMED, with flows for exactly its lines;
H2 every order refused with 409 insufficient_stock is FAILED, with no flow;
H3 one order per Idempotency-Key: every answer of one key names the same order, and no key was
   told both ok and refused;
H4 fencing tokens never go backwards: per goods id, flows in commit order carry non-decreasing
   tokens, and the row's token is at least its newest flow's;
L  liveness: an order is confirmed again within a bound after the last heal.
A check that could not be evaluated (a database unreachable after the heal) is `unknown`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, select

from inventory.chaos.history import FAIL, OK, Op
from inventory.check import Snapshot, check_invariants, read_snapshot
from stock_service.tables import stock, stock_flow

VALID, VIOLATED, UNKNOWN = "valid", "violated", "unknown"


@dataclass
class Verdict:
    check: str
    name: str
    verdict: str
    detail: str
    counterexamples: list[str] = field(default_factory=list)


def answered_ok_is_confirmed(ops: Sequence[Op], snap: Snapshot) -> Verdict:
    bad = sorted(
        {
            op.order_id or op.key
            for op in ops
            if op.outcome == OK
            and (
                snap.orders.get(op.order_id or "") != "CONFIRMED"
                or snap.flows_by_flag.get(op.order_id or "", {}) != op.lines
            )
        }
    )
    told = len({op.key for op in ops if op.outcome == OK})
    return Verdict(
        "H1",
        "every 200 is CONFIRMED with its flows",
        _v(bad),
        f"{told} orders answered 200; {len(bad)} not CONFIRMED with their flows",
        bad[:20],
    )


def refused_is_failed(ops: Sequence[Op], snap: Snapshot) -> Verdict:
    bad = sorted(
        {
            op.order_id or op.key
            for op in ops
            if op.outcome == FAIL
            and (
                snap.orders.get(op.order_id or "") != "FAILED"
                or snap.flows_by_flag.get(op.order_id or "")
            )
        }
    )
    told = len({op.key for op in ops if op.outcome == FAIL})
    return Verdict(
        "H2",
        "every 409 insufficient_stock is FAILED without flows",
        _v(bad),
        f"{told} orders refused; {len(bad)} with flows or not FAILED",
        bad[:20],
    )


def one_order_per_key(ops: Sequence[Op]) -> Verdict:
    ids: dict[str, set[str]] = defaultdict(set)
    outcomes: dict[str, set[str]] = defaultdict(set)
    for op in ops:
        if op.order_id:
            ids[op.key].add(op.order_id)
        if op.outcome in (OK, FAIL):
            outcomes[op.key].add(op.outcome)
    bad = sorted(k for k in ids if len(ids[k]) > 1) + sorted(
        k for k in outcomes if len(outcomes[k]) > 1
    )
    doubles = len({op.key for op in ops if op.double})
    return Verdict(
        "H3",
        "one order per Idempotency-Key",
        _v(bad),
        f"{len(ids)} keys ({doubles} submitted twice at once, "
        f"{sum(1 for op in ops if op.attempt and not op.double)} client retries); "
        f"{len(bad)} keys with two orders or two verdicts",
        bad[:20],
    )


def fences_never_go_back(stock_engine: Engine, prefix: str) -> Verdict:
    like = f"{prefix}%"
    with stock_engine.connect() as conn:
        flows = conn.execute(
            select(stock_flow.c.goods_id, stock_flow.c.fence, stock_flow.c.id)
            .where(stock_flow.c.goods_id.like(like), stock_flow.c.fence.is_not(None))
            .order_by(stock_flow.c.goods_id, stock_flow.c.created_at, stock_flow.c.fence)
        ).all()
        found = conn.execute(
            select(stock.c.goods_id, stock.c.fence).where(stock.c.goods_id.like(like))
        )
        rows = {goods_id: fence for goods_id, fence in found}
    bad: list[str] = []
    newest: dict[str, int] = {}
    for goods_id, fence, flow_id in flows:
        if fence < newest.get(goods_id, fence):
            bad.append(f"{goods_id}: flow {flow_id} token {fence} after {newest[goods_id]}")
        newest[goods_id] = max(fence, newest.get(goods_id, fence))
    bad += [
        f"{g}: row token {rows.get(g)} < flow token {t}"
        for g, t in newest.items()
        if rows.get(g) is not None and rows[g] < t
    ]
    return Verdict(
        "H4",
        "fencing tokens never go backwards",
        _v(bad),
        f"{len(flows)} fenced flows on {len(newest)} goods ids; {len(bad)} out of order",
        bad[:20],
    )


def liveness(recovered_after: float | None, bound: float) -> Verdict:
    if recovered_after is None:
        return Verdict(
            "L",
            "confirmed again after the last heal",
            VIOLATED,
            f"no order confirmed within {bound:.0f} s of the last heal",
        )
    return Verdict(
        "L",
        "confirmed again after the last heal",
        VALID if recovered_after <= bound else VIOLATED,
        f"first confirmation {recovered_after:.1f} s after the last heal (bound {bound:.0f} s)",
    )


def check_run(
    ops: Sequence[Op],
    order_engine: Engine,
    stock_engine: Engine,
    prefix: str,
    initial: dict[str, int],
    liveness_verdict: Verdict,
) -> list[Verdict]:
    verdicts = []
    try:
        snap = read_snapshot(order_engine, stock_engine, prefix)
    except Exception as exc:
        return [Verdict("DB", "read the databases", UNKNOWN, f"{type(exc).__name__}: {exc}")]
    for r in check_invariants(snap, initial):
        examples = _examples(r.numbers)
        verdicts.append(
            Verdict(r.invariant, r.name, VALID if r.ok else VIOLATED, r.detail, examples)
        )
    checks: list[Callable[[], Verdict]] = [
        lambda: answered_ok_is_confirmed(ops, snap),
        lambda: refused_is_failed(ops, snap),
        lambda: one_order_per_key(ops),
        lambda: fences_never_go_back(stock_engine, prefix),
    ]
    for check in checks:
        try:
            verdicts.append(check())
        except Exception as exc:
            verdicts.append(Verdict("?", check.__name__, UNKNOWN, f"{type(exc).__name__}: {exc}"))
    verdicts.append(liveness_verdict)
    return verdicts


def overall(verdicts: Sequence[Verdict]) -> str:
    if any(v.verdict == VIOLATED for v in verdicts):
        return VIOLATED
    if any(v.verdict == UNKNOWN for v in verdicts):
        return UNKNOWN
    return VALID


EXIT_CODES = {VALID: 0, VIOLATED: 1, UNKNOWN: 2}


def _v(bad: Sequence[Any]) -> str:
    return VIOLATED if bad else VALID


def _examples(numbers: dict[str, Any]) -> list[str]:
    """Counterexample ids of an inventory.check result: the keys of its non-empty listings."""
    found: list[str] = []
    for value in numbers.values():
        if isinstance(value, dict) and value:
            found += [str(k) for k in value][:10]
        elif isinstance(value, list) and value:
            found += [str(v) for v in value][:10]
    return found[:20]
