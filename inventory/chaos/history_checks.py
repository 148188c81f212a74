"""The checks a chaos run's history adds to the databases' invariants: what the client was told
must be what the databases say (H1, H2, H3, H5; checker.py has the others and says what each
means)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence

from inventory.chaos.history import FAIL, OK, Op
from inventory.chaos.verdict import Verdict, violated_if
from inventory.check import Snapshot
from inventory.check.invariants import flows_match, within_lines

# BACKORDERED is placed too: settled, what was on hand taken, the rest owed (it ends CONFIRMED
# once every line is filled, or CANCELLED by its buyer).
PLACED = ("CONFIRMED", "AWAITING_PAYMENT", "BACKORDERED")
LATER = {  # a placed status told, and the statuses its order may end in (CANCELLED aside)
    "CONFIRMED": ("CONFIRMED",),
    "AWAITING_PAYMENT": ("AWAITING_PAYMENT", "CONFIRMED"),
    "BACKORDERED": ("BACKORDERED", "CONFIRMED"),
}


def answered_ok_is_confirmed(ops: Sequence[Op], snap: Snapshot) -> Verdict:
    """Every order answered 200 was deducted for exactly its lines (an order that asked for a
    fill or a location: for the units its answer said each line filled), and is CONFIRMED or
    held, or CANCELLED when its buyer meant to cancel it or leave its hold to expire."""
    bad = sorted(
        {
            op.order_id or op.key
            for op in ops
            if op.kind == "order"
            and op.outcome == OK
            and (
                not _placed_or_undone(snap.orders.get(op.order_id or ""), op.intent)
                or not _flows_as_told(op, snap)
            )
        }
    )
    told = len({op.key for op in ops if op.kind == "order" and op.outcome == OK})
    return Verdict(
        "H1",
        "every 200 is CONFIRMED with its flows",
        violated_if(bad),
        f"{told} orders answered 200; {len(bad)} not CONFIRMED with their flows",
        bad[:20],
    )


def _flows_as_told(op: Op, snap: Snapshot) -> bool:
    """The order's flows are what its 200 said it filled (`filled` of each line, kept by the
    workload); without it, its lines (a partial order's: as I3 judges them); a backorder's,
    with its hand-overs, its lines once CONFIRMED, within them while BACKORDERED."""
    flows = snap.flows_by_flag.get(op.order_id or "", {})
    if op.extra.get("fill") == "backorder":  # its flows and hand-overs, as I3 judges them
        end = snap.orders.get(op.order_id or "")
        if end == "BACKORDERED":
            return within_lines(snap, op.order_id or "")
        return end == "CANCELLED" or flows_match(snap, op.order_id or "")
    told = op.extra.get("filled")
    if isinstance(told, dict):
        return flows == {g: n for g, n in told.items() if n}
    if op.extra.get("fill") == "partial":
        return flows_match(snap, op.order_id or "")
    return flows == op.lines


def refused_is_failed(ops: Sequence[Op], snap: Snapshot) -> Verdict:
    bad = sorted(
        {
            op.order_id or op.key
            for op in ops
            if op.kind == "order"
            and op.outcome == FAIL
            and (
                snap.orders.get(op.order_id or "") != "FAILED"
                or snap.flows_by_flag.get(op.order_id or "")
            )
        }
    )
    told = len({op.key for op in ops if op.outcome == FAIL})
    return Verdict(
        "H2",
        "every 409 refusal (insufficient_stock, limit_per_buyer) is FAILED without flows",
        violated_if(bad),
        f"{told} orders refused; {len(bad)} with flows or not FAILED",
        bad[:20],
    )


def _placed_or_undone(end: str | None, intent: str) -> bool:
    return end in PLACED or (end == "CANCELLED" and intent != "none")


def expected_end(op: Op) -> Callable[[str | None], bool] | None:
    """What an answer claims about the order's end, or None when it claims nothing (PENDING,
    no answer)."""
    told = op.order_status
    if op.kind == "pay":
        if op.status == 200:
            return lambda end: end == "CONFIRMED"  # paid: never cancelled after (no one does)
        if told in ("CANCELLING", "CANCELLED"):
            return lambda end: end == "CANCELLED"  # the expiry won: the stock came back
        return None
    if told in ("CANCELLING", "CANCELLED"):  # a cancel answered, or an order cancelled meanwhile
        return lambda end: end == "CANCELLED"
    if told == "FAILED":
        return lambda end: end == "FAILED"
    if op.kind == "order" and told in PLACED:
        # Placed moves forward only: held or owing may end CONFIRMED (paid, filled), never
        # the other way; any may end CANCELLED when its buyer meant to undo it.
        ahead = LATER[told]
        return lambda end: end in ahead or (end == "CANCELLED" and op.intent != "none")
    return None


def answers_hold(ops: Sequence[Op], snap: Snapshot) -> Verdict:
    """Every definite answer against the order's final status: an order answered placed that
    ends FAILED, CANCELLED with nobody meaning to cancel it, or back in a placed status before
    the one told (CONFIRMED then BACKORDERED or AWAITING_PAYMENT), a refusal whose order ends
    CONFIRMED, a cancel answered CANCELLED whose order ends otherwise, a pay answered CONFIRMED
    whose hold ends CANCELLED (paid and expired both), an expiry whose order ends CONFIRMED.
    A cancel by key that came first names the key's tombstone (CANCELLED, no lines), and so
    does the genOrder after it (409 CANCELLED): both hold when the tombstone ends CANCELLED
    (the snapshot must hold it: checker.orders_named)."""
    judged = [(op, expected_end(op)) for op in ops if op.order_id]
    told = [(op, check) for op, check in judged if check is not None]
    bad = sorted(
        {
            f"{op.order_id}: {op.kind} told {op.status} {op.order_status}, "
            f"ends {snap.orders.get(op.order_id or '', 'missing')}"
            for op, check in told
            if not check(snap.orders.get(op.order_id or ""))
        }
    )
    kinds = Counter(op.kind for op, _ in told)
    tombstones = len(
        {
            op.order_id
            for op, _ in told
            if snap.orders.get(op.order_id or "") == "CANCELLED" and op.order_id not in snap.lines
        }
    )
    return Verdict(
        "H5",
        "no answer contradicts the final state",
        violated_if(bad),
        f"{len(told)} definite answers ({', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))});"
        f" {len(bad)} contradicted by the end; {tombstones} keys cancelled before their order "
        "(tombstones: CANCELLED, no lines)",
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
        violated_if(bad),
        f"{len(ids)} keys ({doubles} submitted twice at once, "
        f"{sum(1 for op in ops if op.attempt and not op.double)} client retries); "
        f"{len(bad)} keys with two orders or two verdicts",
        bad[:20],
    )
