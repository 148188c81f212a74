"""I4, no lost sale: every order refused for lack of stock has a line that could not have been
filled when it was refused, as far as the databases can tell without its time.

A line that names no location could be filled by the goods id's total (the locations are all
active unless a row says otherwise; units in transit are out of it): its witness is the least
the total can have been since its seed, the final level less everything that came in since
(returns, restocks, transfers' in legs). A line that names its location could be filled by
that location alone: its witness is the least that location held since the goods id's seed,
replayed from the ledger (ledger_replay.lowest_since_seed, read into the snapshot's
`location_floors`)."""

from __future__ import annotations

from inventory.check.result import CheckResult, few
from inventory.check.snapshot import Snapshot
from order_service.core.statuses import INSUFFICIENT_STOCK


def check_no_lost_sale(snap: Snapshot) -> CheckResult:
    """Each order refused for lack of stock needs a witness: a line whose floor (_floor: the
    least its goods' level, or its named location's, can have been since its seed) is below
    its quantity: the level at the refusal was at least that; if even that fits, stock was
    there. Only lines of the goods' current seed version witness (a re-seeded level may have
    gone up); orders refused only against earlier versions are out of scope, those without
    versions current."""
    refused = [
        o
        for o, s in snap.orders.items()
        if s == "FAILED" and snap.reasons.get(o) == INSUFFICIENT_STOCK
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
        named = snap.line_locations.get(order_id, {})
        if not any(_floor(snap, g, named.get(g)) < lines[g] for g in current if g in lines):
            lost[order_id] = {
                g: {"wanted": lines[g], "final": snap.levels[g][0], "at": named.get(g)}
                for g in current
            }
    detail = f"{checked} refused orders checked, {stale} from earlier seeds" + (
        f"; {len(lost)} refused while their stock was there: {few(lost)}"
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


def _floor(snap: Snapshot, goods: str, where: str | None = None) -> int:
    """The least the level can have been since its seed: at a named location, what the ledger
    says it held at its lowest (unknown: no floor, the line is taken as a witness); else the
    final level less the returns, the units restocked and the transfers' in legs."""
    if where is not None:
        lowest = snap.location_floors.get((goods, where))
        return -1 if lowest is None else lowest
    num, _seeded, version = snap.levels[goods]
    added = snap.adjustments.get(goods, (0, 0))[1]
    came_back = snap.legs.get(goods, (0, 0))[1]
    return num - snap.return_sums.get((goods, version), 0) - added - came_back
