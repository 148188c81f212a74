"""Backorders in a plan (backorders.py states the rules): a deduction that owes what is not on
hand, and the units that reach a goods id which owes some, handed to its waiting lines oldest
first, each hand-over a ledger line (`backorder_filled`) of the flag it fills."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from shared.contract import Outcome
from stock_service.core.allocating import deduct
from stock_service.core.backorders import Backorders
from stock_service.core.model import Decision, Entry, Request
from stock_service.core.places import DEFAULT, Place, ranked
from stock_service.core.running import RunningLedger


def serve_waiting(
    index: int,
    goods_id: str,
    ledger: RunningLedger,
    places: Mapping[str, Place],
    backorders: Backorders,
) -> None:
    """What is on hand of a goods id that owes units goes to its waiting lines, oldest first,
    taken from the active locations in priority order."""
    if not backorders.owes(goods_id):
        return
    order = [loc.location_id for loc in ranked(places)]
    on_hand = ledger.shelves.levels(goods_id, order)
    for flag, taken in backorders.serve(goods_id, on_hand, order):
        parts = tuple((loc, -n) for loc, n in taken)
        units = sum(n for _, n in taken)
        ledger.move(index, goods_id, "backorder_filled", -units, parts=parts, flag=flag)


def try_backorder(
    index: int,
    request: Request,
    refused: Decision,
    ledger: RunningLedger,
    places: Mapping[str, Place],
    backorders: Backorders,
) -> Decision:
    """A deduction refused for lack of stock that asked to backorder: what is on hand is taken
    (a line naming a location: what that location has) and the rest owed, when every short
    line stays within its goods id's limit and, naming a location, within that location's;
    else the refusal stands, its shortfall of the goods id that passed a limit naming it."""
    if not request.backorder or request.partial or request.hold:
        return refused
    short = {s.goods_id: s.requested - s.available for s in refused.shortfalls}
    bound = backorders.bound(short, request.locations)
    if bound is not None:
        refused.shortfalls = [
            replace(s, bound=bound) if s.goods_id == bound.goods_id else s
            for s in refused.shortfalls
        ]
        return refused
    taken = deduct(index, replace(request, partial=True), ledger, places)
    decision = Decision(Outcome.BACKORDERED)
    if taken.outcome is Outcome.DEDUCTED:
        decision.entries = taken.entries
        decision.allocations = taken.allocations
    for goods_id, units in sorted(short.items()):
        entry = ledger.move(index, goods_id, "backordered", 0, parts=())
        decision.entries.append(entry)
        where = request.locations.get(goods_id)
        backorders.wait(request.flag, goods_id, entry.seq, units, where)
    decision.backordered = short
    return decision


def give_back(
    index: int,
    request: Request,
    ledger: RunningLedger,
    places: Mapping[str, Place],
    backorders: Backorders,
    held: bool,
) -> list[Entry]:
    """A deducted flag's units come back, each to the location it came from: its lines and
    parts as read before the hold, and what lines waiting for units got in this same plan.
    A line still waiting gives up its place; what comes back then serves the lines waiting."""
    lines = {
        g: dict(request.parts.get(g) or ({DEFAULT: n} if n else {}))
        for g, n in request.lines.items()
    }
    for entry in ledger.entries:
        if entry.kind == "backorder_filled" and entry.flag == request.flag:
            came = lines.setdefault(entry.goods_id, {})
            for loc, delta in entry.parts:
                came[loc] = came.get(loc, 0) - delta
    entries = []
    for goods_id, came in sorted(lines.items()):
        back = tuple(sorted((loc, n) for loc, n in came.items() if n))
        units = sum(n for _, n in back)
        if units:
            entries.append(ledger.move(index, goods_id, "returned", units, parts=back))
            if held:
                for location, n in back:
                    ledger.hold(goods_id, -n, location)
        backorders.give_up(request.flag, goods_id, ledger.seqs.get(goods_id, 0))
        serve_waiting(index, goods_id, ledger, places, backorders)
    return entries
