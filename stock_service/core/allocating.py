"""A deduction decided against the running levels: all or nothing (the default) or partial,
from the locations the allocation rule (allocation.py) chooses. Pure, like the rest of core/.

A goods id that has no named location, in a request that names none and takes all or nothing,
is decided as it always was: its whole level is in the default location (places.py), so the
rule has nothing to choose and the hot path pays nothing for it."""

from __future__ import annotations

from collections.abc import Mapping

from shared.contract import Outcome
from stock_service.core.allocation import Line, allocate
from stock_service.core.model import Decision, Request, Shortfall
from stock_service.core.places import DEFAULT, Place, ranked
from stock_service.core.running import RunningLedger


def deduct(
    index: int, request: Request, ledger: RunningLedger, places: Mapping[str, Place]
) -> Decision:
    """The decision of deduction `index`, its ledger lines moved when it deducts (refused:
    nothing moves). A partial deduction that fills anything is `deducted`, its shortfalls
    naming what each line that was not filled whole got."""
    lines = sorted(request.lines.items())
    plain = not (
        request.locations
        or request.partial
        or any(ledger.shelves.has_named(g) for g, _ in lines)
        or DEFAULT in places
    )
    if plain:
        return _from_default(index, request, ledger, lines)
    order = ranked(places)
    active = [loc.location_id for loc in order]
    available = {g: ledger.shelves.levels(g, active) for g, _ in lines}
    wanted = [Line(g, n, request.locations.get(g)) for g, n in lines]
    chosen = allocate(wanted, order, available, request.partial)
    if chosen.refused:
        short = [
            Shortfall(
                s.goods_id, s.wanted, _capacity(line, available), _version(ledger, s.goods_id)
            )
            for s in chosen.shortfalls
            for line in wanted
            if line.goods_id == s.goods_id
        ]
        return Decision(Outcome.INSUFFICIENT, short)
    decision = Decision(Outcome.DEDUCTED)
    decision.shortfalls = [
        Shortfall(s.goods_id, s.wanted, s.filled, _version(ledger, s.goods_id))
        for s in chosen.shortfalls
    ]
    parts: dict[str, list[tuple[str, int]]] = {}
    for a in chosen.allocations:
        parts.setdefault(a.goods_id, []).append((a.location_id, -a.units))
        decision.allocations.append((a.goods_id, a.location_id, a.units))
    for goods_id, moved in sorted(parts.items()):
        units = -sum(delta for _, delta in moved)
        entry = ledger.move(index, goods_id, "deducted", -units, parts=tuple(moved))
        decision.entries.append(entry)
        if request.hold:
            for location, delta in moved:
                ledger.hold(goods_id, -delta, location)
    return decision


def _from_default(
    index: int, request: Request, ledger: RunningLedger, lines: list[tuple[str, int]]
) -> Decision:
    """All or nothing from the default location, which holds the whole level."""
    short = [
        Shortfall(goods_id, wanted, ledger.level(goods_id), _version(ledger, goods_id))
        for goods_id, wanted in lines
        if ledger.level(goods_id) < wanted
    ]
    if short:
        return Decision(Outcome.INSUFFICIENT, short)
    decision = Decision(Outcome.DEDUCTED)
    for goods_id, wanted in lines:
        decision.entries.append(ledger.move(index, goods_id, "deducted", -wanted))
        decision.allocations.append((goods_id, DEFAULT, wanted))
        if request.hold:
            ledger.hold(goods_id, wanted)
    return decision


def _capacity(line: Line, available: Mapping[str, Mapping[str, int]]) -> int:
    """What a refused line could have had: its named location's units, or all active ones'."""
    have = available.get(line.goods_id, {})
    if line.location is not None:
        return have.get(line.location, 0)
    return sum(have.values())


def _version(ledger: RunningLedger, goods_id: str) -> int | None:
    return ledger.version(goods_id) if goods_id in ledger.levels else None
