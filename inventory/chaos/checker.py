"""The chaos run's verdicts: the design's invariants read from the databases (inventory.check),
and what the history adds: what the client was told must be what the databases say.

H1 every order answered 200 is CONFIRMED, with flows for exactly its lines;
H2 every order refused with 409 insufficient_stock (or limit_per_buyer: buyer_limits.py, whose
   PB judges the limit) is FAILED, with no flow;
H3 one order per Idempotency-Key: every answer of one key names the same order, and no key was
   told both ok and refused;
H4 fencing tokens never go backwards: per goods id, flows in commit order carry non-decreasing
   tokens, and the row's token is at least its newest flow's;
H5 no answer contradicts the final state: an order answered placed ends placed (or cancelled
   when its buyer meant it), a refusal ends FAILED, a cancel answered CANCELLED ends CANCELLED,
   a pay answered CONFIRMED ends CONFIRMED (never paid and expired both);
(H1, H2, H3 and H5 are in history_checks.py)
L  liveness: an order is confirmed again within a bound after the last heal;
S  settled by the cluster: no order PENDING the bound after the load ended, the run having
   settled nothing itself (the cluster's own reconcilers did);
LS lost sales, counted (not a violation): orders FAILED for an infrastructure reason (not for
   lack of stock) whose goods still had enough stock at the end, by cause;
LA late first attempts after a refusal, counted (slow_attempts.py), when the run has the
   slow-first-attempts fault: how often the story that I9 and H2 judge was lined up.
An order the history names with no line of the run's goods (a tombstone: a cancel by key
before its order) is read by its id (orders_named), so the answers about it are judged too.
A check that could not be evaluated (a database unreachable after the heal) is `unknown`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from sqlalchemy import Engine

from inventory.chaos.history import Op
from inventory.chaos.history_checks import (
    answered_ok_is_confirmed,
    answers_hold,
    one_order_per_key,
    refused_is_failed,
)
from inventory.chaos.ledger_checks import fences_never_go_back, with_returns_in_ledger_order
from inventory.chaos.location_checks import location_verdicts
from inventory.chaos.verdict import (
    COUNTED,
    UNKNOWN,
    VALID,
    VIOLATED,
    Verdict,
)
from inventory.check import (
    Snapshot,
    check_invariants,
    read_orders,
    read_snapshot,
    refused_for_lack_of_stock,
)
from inventory.check.buyers import LIMIT_PER_BUYER
from order_service.core.statuses import RECONCILED

__all__ = [
    "COUNTED",
    "EXIT_CODES",
    "UNKNOWN",
    "VALID",
    "VIOLATED",
    "Settlement",
    "Verdict",
    "answered_ok_is_confirmed",
    "answers_hold",
    "check_run",
    "fences_never_go_back",
    "liveness",
    "lost_orders",
    "lost_sales",
    "one_order_per_key",
    "orders_named",
    "overall",
    "refused_is_failed",
    "settled_by_the_cluster",
]


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


@dataclass
class Settlement:
    """What the run saw while the cluster settled its orders (it settles nothing itself)."""

    pending_at_start: int  # PENDING when the watch began, after the last heal
    left: int  # still PENDING when the watch ended
    seconds: float  # from the end of the load to the last settlement (or to the bound)
    bound: float
    reconciled: int  # orders of the run the reconcilers settled
    # From placing to settling, over the orders the reconcilers settled: the slowest, the median
    slowest_s: float | None = None
    median_s: float | None = None
    expired: int = 0  # holds left unpaid that were cancelled (by the reconcilers or a late pay)

    def describe(self) -> str:
        if self.left:
            return f"{self.left} orders still PENDING {self.bound:.0f} s after the load"
        took = (
            f", {self.median_s} s from placing to settling at the median, the slowest "
            f"{self.slowest_s} s"
            if self.slowest_s is not None
            else ""
        )
        return (
            f"every order settled {self.seconds:.1f} s after the load "
            f"({self.pending_at_start} were unsettled after the heal); the reconcilers settled "
            f"{self.reconciled} orders of the run{took}; {self.expired} unpaid holds expired"
        )

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def settled_by_the_cluster(settled: Settlement) -> Verdict:
    return Verdict(
        "S",
        "every order settled by the cluster",
        VIOLATED if settled.left else VALID,
        settled.describe() + f" (bound {settled.bound:.0f} s)",
    )


def lost_orders(snap: Snapshot) -> dict[str, str]:
    """Order id -> cause, of the FAILED orders that were not refused for lack of stock, whose
    every line's goods ended with at least its quantity: sales the infrastructure lost, by the
    cause in their reason. A refusal found by a void or the reconciler after an unknown outcome
    is a refusal too (the stock was short when it was decided, and came back after): not
    counted; nor is a refusal by a buyer's limit (buyer_limits.py): a rule, not a loss."""
    lost: dict[str, str] = {}
    for order_id, status in snap.orders.items():
        reason = snap.reasons.get(order_id) or ""
        if status != "FAILED" or refused_for_lack_of_stock(reason):
            continue
        if reason.startswith(LIMIT_PER_BUYER):
            continue
        lines = snap.lines.get(order_id, {})
        if lines and all(g in snap.levels and snap.levels[g][0] >= n for g, n in lines.items()):
            cause = reason.split(":")[0] or "none"
            if cause == RECONCILED:  # settled by the reconciler: what it found
                cause = f"{RECONCILED}: {reason.split(':')[1].split()[0]}"
            lost[order_id] = cause
    return lost


def lost_sales(snap: Snapshot) -> Verdict:
    """LS, counted: the lost orders (lost_orders) by cause."""
    lost = lost_orders(snap)
    causes = Counter(lost.values())
    examples = [f"{o}: {(snap.reasons.get(o) or '')[:80]}" for o in lost]
    by_cause = ", ".join(f"{c} {n}" for c, n in causes.most_common()) or "none"
    return Verdict(
        "LS",
        "lost sales (infrastructure failures with stock left)",
        COUNTED,
        f"{len(lost)} orders failed while their stock was there; by cause: {by_cause}",
        examples[:20],
    )


def orders_named(snap: Snapshot, order_engine: Engine, ops: Sequence[Op]) -> Snapshot:
    """The snapshot, with the orders the history names that it lacks because they have no line
    of the run's goods: tombstones (a cancel by key that came before its order: CANCELLED, no
    lines; its genOrder answered 409 CANCELLED). An order named and found nowhere stays
    missing, and H5 says so."""
    missing = sorted({op.order_id for op in ops if op.order_id and op.order_id not in snap.orders})
    if not missing:
        return snap
    found = read_orders(order_engine, missing)
    return replace(
        snap,
        orders={**snap.orders, **{o: status for o, (status, _) in found.items()}},
        reasons={**snap.reasons, **{o: reason for o, (_, reason) in found.items()}},
    )


def check_run(
    ops: Sequence[Op],
    order_engine: Engine,
    stock_engine: Engine,
    prefix: str,
    initial: dict[str, int],
    liveness_verdict: Verdict,
    settlement_verdict: Verdict | None = None,
    lost: dict[str, str] | None = None,
    places: Mapping[str, tuple[int, bool]] | None = None,
    figures: dict[str, Any] | None = None,
) -> list[Verdict]:
    """The verdicts; `lost`, when given, is filled with the lost sales (lost_orders), which the
    report counts per fault window. `places`: the locations the run set, for L1-L5
    (location_checks.py), whose figures fill `figures`."""
    verdicts = []
    # The stock database read in one snapshot: the reconcilers still expire holds while the
    # run checks, and a return committed between the read of the levels and that of the
    # returns made I1 count it in one and not the other (a valid run judged "2 units
    # differ" right after a short run whose last holds expired during its check).
    # (SQLite, in the tests, has no such level: its read transaction is one snapshot already.)
    consistent = stock_engine
    if stock_engine.dialect.name == "postgresql":
        consistent = stock_engine.execution_options(isolation_level="REPEATABLE READ")
    try:
        snap = orders_named(read_snapshot(order_engine, consistent, prefix), order_engine, ops)
    except Exception as exc:
        return [Verdict("DB", "read the databases", UNKNOWN, f"{type(exc).__name__}: {exc}")]
    if lost is not None:
        lost.update(lost_orders(snap))
    # I8's "a return after its deduction" is judged by the ledger's order, not by the rows'
    # stamps: two stock hosts stamp with their own clocks, skewed in a run (clocks.py).
    snap = replace(snap, return_times={})
    ordered = False  # joined to I8's returns check (the one with `after_cancel`), or alone
    for r in check_invariants(snap, initial):
        examples = _examples(r.numbers)
        verdict = Verdict(r.invariant, r.name, VALID if r.ok else VIOLATED, r.detail, examples)
        if r.invariant == "I8" and "after_cancel" in r.numbers and not ordered:
            verdict, ordered = with_returns_in_ledger_order(verdict, consistent, prefix), True
        verdicts.append(verdict)
    if not ordered:
        alone = Verdict("I8", "returns after their deductions", VALID, "by the ledger")
        verdicts.append(with_returns_in_ledger_order(alone, consistent, prefix))
    checks: list[Callable[[], Verdict]] = [
        lambda: answered_ok_is_confirmed(ops, snap),
        lambda: refused_is_failed(ops, snap),
        lambda: answers_hold(ops, snap),
        lambda: one_order_per_key(ops),
        lambda: fences_never_go_back(stock_engine, prefix),
        lambda: lost_sales(snap),
    ]
    for check in checks:
        try:
            verdicts.append(check())
        except Exception as exc:
            verdicts.append(Verdict("?", check.__name__, UNKNOWN, f"{type(exc).__name__}: {exc}"))
    if places is not None:
        found, numbers = location_verdicts(consistent, prefix, snap, places)
        verdicts += found
        if figures is not None:
            figures.update(numbers)
    verdicts.append(liveness_verdict)
    if settlement_verdict is not None:
        verdicts.append(settlement_verdict)
    return verdicts


def overall(verdicts: Sequence[Verdict]) -> str:
    if any(v.verdict == VIOLATED for v in verdicts):
        return VIOLATED
    if any(v.verdict == UNKNOWN for v in verdicts):
        return UNKNOWN
    return VALID


EXIT_CODES = {VALID: 0, VIOLATED: 1, UNKNOWN: 2}


def _examples(numbers: dict[str, Any]) -> list[str]:
    """Counterexample ids of an inventory.check result: the keys of its non-empty listings."""
    found: list[str] = []
    for value in numbers.values():
        if isinstance(value, dict) and value:
            found += [str(k) for k in value][:10]
        elif isinstance(value, list) and value:
            found += [str(v) for v in value][:10]
    return found[:20]
