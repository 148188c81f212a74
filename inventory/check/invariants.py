"""The invariants of the design, each a function of a Snapshot (inventory.check/snapshot.py):

I1 no oversell: no level below zero; initial + adjusted + legs - final = deducted - returned,
   per goods id and seed version (initial: the last PUT /stock's level, or given; adjusted:
   since then; legs: the transfers' legs since then, so units in transit are out of the level;
   deducted: the flows and the hand-overs to backordered lines, backorder_fill).
I2 at most one deduction per flag: no (flag, goods id) with two flows.
I3 orders match flows: every CONFIRMED or AWAITING_PAYMENT order has its flows, for its
   quantities (a partial order: the units it filled, as the order database recorded them),
   and no return; no FAILED order has any flow; every CANCELLED order has returns exactly
   equal to its flows. A backorder order (fill=backorder) counts what it took: its flows plus
   what its lines were handed (CONFIRMED: exactly its lines; BACKORDERED: within its lines;
   CANCELLED: returned exactly; FAILED: nothing).
I4 no lost sale: every order refused for lack of stock has a line whose final level, less what
   was returned to it since its seed, is below its quantity (lost_sale.py; a line that named
   its location, against that location).
I5 liveness: no order left PENDING or CANCELLING.
I8 returns: each return undoes a deduction made before it, exactly (a backordered flag's: what
   it took and was handed); no deduction of a voided flag; no hold unpaid past its deadline
   plus the stated bound.
I9 a refusal stays a refusal: no order refused for lack of stock has a flow, whatever came back
   to the shelf after its refusal, and no flag the stock database decided refused has one (the
   model's I9, docs/model.md: told FAILED, no flow).
"""

from __future__ import annotations

from datetime import datetime

from inventory.check.held import check_held_once
from inventory.check.lost_sale import check_no_lost_sale
from inventory.check.result import CheckResult
from inventory.check.result import few as _few
from inventory.check.snapshot import Snapshot
from order_service.core.statuses import BACKORDERED, HOLDING, INSUFFICIENT_STOCK, RECONCILED

REFUSED = INSUFFICIENT_STOCK  # the reason of an order refused for lack of stock
HOLD_BOUND = 60.0  # seconds past its deadline a hold may still be AWAITING_PAYMENT


def refused_for_lack_of_stock(reason: str | None) -> bool:
    """An order FAILED on the stock database's refusal: answered so at once (exactly REFUSED),
    or found refused by the void after an unknown outcome (`insufficient_stock: <why>`) or by
    the reconciler (`reconciled: insufficient_stock (...)`): a refusal is recorded as the flag's
    decision (so that a late attempt of the flag never deducts), and a void can find it there."""
    reason = reason or ""
    return (
        reason == REFUSED
        or reason.startswith(f"{REFUSED}:")
        or reason.startswith(f"{RECONCILED}: {REFUSED}")
    )


def check_invariants(
    snap: Snapshot,
    initial: dict[str, int] | None = None,
    now: datetime | None = None,
    hold_bound: float = HOLD_BOUND,
) -> list[CheckResult]:
    from shared.database.engines import utcnow

    return [
        check_no_negative_stock(snap),
        check_levels_match_flows(snap, initial or {}),
        check_one_flow_per_flag(snap),
        check_orders_match_flows(snap),
        check_no_lost_sale(snap),
        check_no_pending(snap),
        check_returns(snap, now or utcnow(), hold_bound),
        check_refusal_stays(snap),
        check_held_once(snap),
    ]


def check_no_negative_stock(snap: Snapshot) -> CheckResult:
    negative = {g: v[0] for g, v in snap.levels.items() if v[0] < 0}
    return CheckResult(
        "I1",
        "no negative stock",
        not negative,
        f"{len(negative)} of {len(snap.levels)} goods below zero"
        + (f": {_few(negative)}" if negative else ""),
        {"goods": len(snap.levels), "negative": negative},
    )


def check_levels_match_flows(snap: Snapshot, initial: dict[str, int]) -> CheckResult:
    """initial + adjusted - final = deducted - returned, per goods id and seed version."""
    off: dict[str, dict[str, int]] = {}
    sold = flowed = back = added = 0
    moved = 0  # the transfers' legs: what left for another location, less what came in
    for goods, (num, seeded, version) in snap.levels.items():
        adjusted = snap.adjustments.get(goods, (0, 0))[0]
        legs = snap.legs.get(goods, (0, 0))[0]
        start, added = initial.get(goods, seeded) + adjusted + legs, added + adjusted
        moved += legs
        flows = snap.flow_sums.get((goods, version), 0) + snap.fill_sums.get(goods, 0)
        returned = snap.return_sums.get((goods, version), 0)
        sold += start - num
        flowed += flows
        back += returned
        if start - num != flows - returned:
            off[goods] = {
                "initial": start - adjusted - legs,
                "adjusted": adjusted,
                "legs": legs,
                "final": num,
                "flows": flows,
                "returned": returned,
                "oversold": flows - returned - start if flows - returned > start else 0,
            }
    oversold = sum(v["oversold"] for v in off.values())
    legged = f" + legs ({moved})" if moved else ""
    detail = f"initial + adjusted{legged} - final = {sold}, flows - returns = {flowed} - {back}"
    if off:
        detail += f"; {len(off)} goods differ" + (f", oversold by {oversold}" if oversold else "")
        detail += f": {_few(off)}"
    return CheckResult(
        "I1",
        "initial - final = flows - returns",
        not off,
        detail,
        {
            "deducted": sold,  # initial + adjusted - final
            "adjusted": added,  # the adjustments since each goods id's seed: restocks, counts
            "legs": moved,  # the transfers' legs since then: less the units in transit
            "flows": flowed,
            "returned": back,
            "mismatched": off,
            "oversold": oversold,
        },
    )


def check_one_flow_per_flag(snap: Snapshot) -> CheckResult:
    dups = snap.duplicate_flows
    return CheckResult(
        "I2",
        "one flow per (flag, goods id)",
        not dups,
        f"{len(dups)} duplicated (flag, goods id)" + (f": {dups[:3]}" if dups else ""),
        {"duplicates": len(dups)},
    )


def check_orders_match_flows(snap: Snapshot) -> CheckResult:
    """CONFIRMED and AWAITING_PAYMENT orders have their flows and no return; FAILED orders have
    no flow; CANCELLED orders have returns exactly equal to their flows (both empty when the
    cancel came before any deduction)."""
    holding = [o for o, s in snap.orders.items() if s in HOLDING]
    failed = [o for o, s in snap.orders.items() if s == "FAILED"]
    cancelled = [o for o, s in snap.orders.items() if s == "CANCELLED"]
    owing = [o for o, s in snap.orders.items() if s == BACKORDERED]
    missing = [o for o in holding if not flows_match(snap, o) or snap.returns_by_flag.get(o)]
    missing += [o for o in owing if not within_lines(snap, o) or snap.returns_by_flag.get(o)]
    failed_with_flows = [o for o in failed if snap.had(o)]
    unreturned = [o for o in cancelled if snap.returns_by_flag.get(o, {}) != snap.had(o)]
    ok = not missing and not failed_with_flows and not unreturned
    return CheckResult(
        "I3",
        "orders match flows",
        ok,
        f"{len(holding)} confirmed or held, {len(owing)} backordered ({len(missing)} without "
        "their flows), "
        f"{len(failed)} failed ({len(failed_with_flows)} with flows), "
        f"{len(cancelled)} cancelled ({len(unreturned)} whose returns differ from their flows)",
        {
            "confirmed": len(holding),
            "failed": len(failed),
            "cancelled": len(cancelled),
            "confirmed_without_flows": missing[:20],
            "failed_with_flows": failed_with_flows[:20],
            "cancelled_not_returned": unreturned[:20],
        },
    )


def flows_match(snap: Snapshot, order_id: str) -> bool:
    """A placed order's flows are what it was confirmed for: all or nothing, exactly its
    lines (and the units filled, when recorded, are its lines); partial, the units each line
    filled as recorded (none for a line filled with nothing), at least one, each within its
    line; a partial order with nothing recorded, flows within its lines."""
    lines = snap.lines.get(order_id, {})
    flows = snap.flows_by_flag.get(order_id, {})
    filled = snap.filled.get(order_id)
    if order_id in snap.backorder:  # its flows and hand-overs, together its lines
        return snap.had(order_id) == lines and (not filled or filled == lines)
    if order_id not in snap.partial:
        return flows == lines and (not filled or filled == lines)
    if filled:
        within = all(0 <= filled.get(g, 0) <= n for g, n in lines.items())
        return within and bool(flows) and flows == {g: n for g, n in filled.items() if n}
    return bool(flows) and all(g in lines and 0 < n <= lines[g] for g, n in flows.items())


def within_lines(snap: Snapshot, order_id: str) -> bool:
    """A BACKORDERED order: a backorder order whose lines have had (flows and hand-overs) at
    most their units, each of its own lines."""
    lines = snap.lines.get(order_id, {})
    had = snap.had(order_id)
    return order_id in snap.backorder and all(0 < n <= lines.get(g, 0) for g, n in had.items())


def check_no_pending(snap: Snapshot) -> CheckResult:
    pending = [o for o, s in snap.orders.items() if s in ("PENDING", "CANCELLING")]
    return CheckResult(
        "I5",
        "every order final",
        not pending,
        f"{len(pending)} of {len(snap.orders)} orders still PENDING or CANCELLING",
        {"pending": len(pending), "orders": len(snap.orders)},
    )


def check_returns(snap: Snapshot, now: datetime, hold_bound: float) -> CheckResult:
    """I8: a return undoes exactly a deduction made before it; no deduction of a flag after its
    cancel; no hold left unpaid past its deadline and the bound."""
    stray = [
        f"{flag}: returned {returns}, deducted {snap.had(flag)}"
        for flag, returns in snap.returns_by_flag.items()
        if returns != snap.had(flag)
    ]
    after_cancel = [
        f"{flag}: deducted after it was voided"
        for flag, decided in snap.decisions.items()
        if decided == "voided" and snap.flows_by_flag.get(flag)
    ] + [
        f"{flag}/{goods}: deducted at {deducted}, returned at {returned}"
        for flag, times in snap.return_times.items()
        for goods, (deducted, returned) in times.items()
        if (deducted is None and not snap.fills_by_flag.get(flag, {}).get(goods))
        or (deducted is not None and deducted > returned)
    ]
    late = [
        order_id
        for order_id, deadline in snap.pay_deadlines.items()
        if snap.orders.get(order_id) == "AWAITING_PAYMENT"
        and (now - deadline).total_seconds() > hold_bound
    ]
    bad = stray + after_cancel + late
    returned = sum(sum(r.values()) for r in snap.returns_by_flag.values())
    return CheckResult(
        "I8",
        "returns undo exactly their deductions; holds expire",
        not bad,
        f"{len(snap.returns_by_flag)} flags returned ({returned} units), {len(stray)} not "
        f"matching their deduction, {len(after_cancel)} deducted after their cancel; "
        f"{len(late)} holds unpaid {hold_bound:.0f} s past their deadline",
        {"stray": stray[:20], "after_cancel": after_cancel[:20], "late_holds": late[:20]},
    )


def check_refusal_stays(snap: Snapshot) -> CheckResult:
    """I9: no order FAILED for lack of stock, and no flag decided `refused`, has a flow. Its
    story: a retry refused (the buyer told 409), stock back, the slow first attempt
    deducting; I3 sees that flow too, this check names the story."""
    refused = [
        o
        for o, s in snap.orders.items()
        if s == "FAILED" and refused_for_lack_of_stock(snap.reasons.get(o))
    ]
    deducted_after = sorted(o for o in refused if snap.flows_by_flag.get(o))
    decided_refused = sorted(
        f for f, d in snap.decisions.items() if d == "refused" and snap.flows_by_flag.get(f)
    )
    bad = sorted({*deducted_after, *decided_refused})
    return CheckResult(
        "I9",
        "a refusal stays a refusal",
        not bad,
        f"{len(refused)} orders refused for lack of stock, {len(deducted_after)} with a flow; "
        f"{len(decided_refused)} flags decided refused with a flow",
        {
            "refused": len(refused),
            "refused_with_flows": deducted_after[:20],
            "decided_refused_with_flows": decided_refused[:20],
        },
    )
