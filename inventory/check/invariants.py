"""The invariants of the design, each a function of a Snapshot (inventory.check/snapshot.py):

I1 no oversell: no level below zero; initial + adjusted - final = deducted - returned, per goods
   id and seed version (initial: the last PUT /stock's level, or given; adjusted: since then).
I2 at most one deduction per flag: no (flag, goods id) with two flows.
I3 orders match flows: every CONFIRMED or AWAITING_PAYMENT order has its flows, for its
   quantities, and no return; no FAILED order has any flow; every CANCELLED order has returns
   exactly equal to its flows.
I4 no lost sale: every order refused for lack of stock has a line whose final level, less what
   was returned to it since its seed, is below its quantity (see check_no_lost_sale).
I5 liveness: no order left PENDING or CANCELLING.
I8 returns: each return undoes a deduction made before it, exactly; no deduction of a voided
   flag; no hold unpaid past its deadline plus the stated bound.
I9 a refusal stays a refusal: no order refused for lack of stock has a flow, whatever came back
   to the shelf after its refusal, and no flag the stock database decided refused has one (the
   model's I9, docs/model.md: told FAILED, no flow).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from inventory.check.held import check_held_once
from inventory.check.result import CheckResult
from inventory.check.snapshot import Snapshot
from order_service.model import HOLDING, INSUFFICIENT_STOCK, RECONCILED

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
    from shared.db import utcnow

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
    for goods, (num, seeded, version) in snap.levels.items():
        adjusted = snap.adjustments.get(goods, (0, 0))[0]
        start, added = initial.get(goods, seeded) + adjusted, added + adjusted
        flows = snap.flow_sums.get((goods, version), 0)
        returned = snap.return_sums.get((goods, version), 0)
        sold += start - num
        flowed += flows
        back += returned
        if start - num != flows - returned:
            off[goods] = {
                "initial": start - adjusted,
                "adjusted": adjusted,
                "final": num,
                "flows": flows,
                "returned": returned,
                "oversold": flows - returned - start if flows - returned > start else 0,
            }
    oversold = sum(v["oversold"] for v in off.values())
    detail = f"initial + adjusted - final = {sold}, flows - returns = {flowed} - {back}"
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
    missing = [
        o
        for o in holding
        if snap.flows_by_flag.get(o, {}) != snap.lines.get(o, {}) or snap.returns_by_flag.get(o)
    ]
    failed_with_flows = [o for o in failed if snap.flows_by_flag.get(o)]
    unreturned = [
        o for o in cancelled if snap.returns_by_flag.get(o, {}) != snap.flows_by_flag.get(o, {})
    ]
    ok = not missing and not failed_with_flows and not unreturned
    return CheckResult(
        "I3",
        "orders match flows",
        ok,
        f"{len(holding)} confirmed or held ({len(missing)} without their flows), "
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


def check_no_lost_sale(snap: Snapshot) -> CheckResult:
    """Each order refused for lack of stock needs a witness: a line whose goods' final level,
    less everything returned or restocked since its seed (_floor), is below its quantity: the
    level at the refusal was at least that; if even that fits, stock was there. Only lines of
    the goods' current seed version witness (a re-seeded level may have gone up); orders
    refused only against earlier versions are out of scope, those without versions current."""
    refused = [
        o for o, s in snap.orders.items() if s == "FAILED" and snap.reasons.get(o) == REFUSED
    ]
    checked, stale, lost = 0, 0, {}
    for order_id in refused:
        lines = snap.lines.get(order_id, {})
        short = snap.refused.get(order_id) or dict.fromkeys(lines)
        current = [
            g
            for g, version in short.items()
            if g in snap.levels and version in (None, snap.levels[g][2])
        ]
        if not current:
            stale += 1
            continue
        checked += 1
        if not any(_floor(snap, g) < lines[g] for g in current if g in lines):
            lost[order_id] = {g: {"wanted": lines[g], "final": snap.levels[g][0]} for g in current}
    detail = f"{checked} refused orders checked, {stale} from earlier seeds" + (
        f"; {len(lost)} refused while their stock was there: {_few(lost)}"
        if lost
        else ", each has a line that does not fit"
    )
    return CheckResult(
        "I4",
        "no lost sale",
        not lost,
        detail,
        {"checked": checked, "earlier_seeds": stale, "lost": lost},
    )


def _floor(snap: Snapshot, goods: str) -> int:
    """The least the level can have been since its seed: the final level less the returns and
    the units restocked."""
    num, _seeded, version = snap.levels[goods]
    added = snap.adjustments.get(goods, (0, 0))[1]
    return num - snap.return_sums.get((goods, version), 0) - added


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
        f"{flag}: returned {returns}, deducted {snap.flows_by_flag.get(flag, {})}"
        for flag, returns in snap.returns_by_flag.items()
        if returns != snap.flows_by_flag.get(flag, {})
    ]
    after_cancel = [
        f"{flag}: deducted after it was voided"
        for flag, decided in snap.decisions.items()
        if decided == "voided" and snap.flows_by_flag.get(flag)
    ] + [
        f"{flag}/{goods}: deducted at {deducted}, returned at {returned}"
        for flag, times in snap.return_times.items()
        for goods, (deducted, returned) in times.items()
        if deducted is None or deducted > returned
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


def _few(mapping: dict[str, Any], n: int = 3) -> str:
    items = list(mapping.items())
    text = ", ".join(f"{k} {v}" for k, v in items[:n])
    return text + (f" (+{len(items) - n} more)" if len(items) > n else "")
