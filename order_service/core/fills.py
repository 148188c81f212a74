"""Partial fill and named locations, the order side's rules, as pure logic (docs/locations.md).

An order asks for its lines all or nothing (the default, and every order placed before there
were locations) or `partial`: confirmed when the stock service deducted at least one unit, each
line filled as far as the stock allowed, the rest a refusal that stays one. A line may name
its location: taken from there or not at all. Or `backorder` (docs/backorders.md): what is
on hand taken, the rest owed in line, with no location and no hold (order_service/core/backorders.py
reads what the stock service answers of it). Each is sent only when asked for, so the stock
calls of an ordinary order are what they always were.

A deducted flag's flows carry the units filled, one per goods id, none for a goods id of which
nothing was filled: `filled_from` reads them against the order's lines, for every path that
confirms an order (the deduction's answer, the polled flows, the stock database's decision).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ALL_OR_NOTHING, PARTIAL, BACKORDER = "all", "partial", "backorder"
FILLS = (ALL_OR_NOTHING, PARTIAL, BACKORDER)
# The stock service's name for the location of a stack that never named one.
DEFAULT_LOCATION = "default"


class BadFill(ValueError):
    """`fill` is none of "all", "partial" and "backorder", a goods id's lines name different
    locations, or a backorder names a location or a hold: nothing is written."""

    def __init__(self, message: str, field: str, goods_ids: list[str] | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.goods_ids = goods_ids


@dataclass(frozen=True)
class Fill:
    """How an order asks for its lines: `partial`, `backorder` (what is on hand now, the rest
    owed in line: order_service/core/backorders.py) or all or nothing, and the location a line is
    taken from (goods id -> location; a line not in it: wherever the stock service allocates
    it; a backorder names none)."""

    partial: bool = False
    locations: Mapping[str, str] = field(default_factory=dict)
    backorder: bool = False

    @property
    def plain(self) -> bool:
        """An order as there were before locations: its calls and answers are as they were."""
        return not self.partial and not self.backorder and not self.locations

    @property
    def mode(self) -> str:
        if self.backorder:
            return BACKORDER
        return PARTIAL if self.partial else ALL_OR_NOTHING

    @property
    def asked(self) -> str | None:
        """The `fill` sent to the stock service: none for all or nothing, so an ordinary
        order's call is what it always was."""
        return None if self.mode == ALL_OR_NOTHING else self.mode

    def fingerprint(self) -> dict[str, object]:
        """What it adds to an Idempotency-Key's fingerprint (nothing for a plain order)."""
        fields: dict[str, object] = {}
        if self.asked:
            fields["fill"] = self.asked
        if self.locations:
            fields["locations"] = dict(sorted(self.locations.items()))
        return fields


ALL = Fill()


def fill_of(fill: Any, lines: Iterable[tuple[str, str | None]], hold: bool = False) -> Fill:
    """The genOrder body's `fill` and its lines' (goods id, location): BadFill for a `fill`
    other than "all", "partial" and "backorder", for a goods id whose lines (summed into one)
    name different locations, and for a backorder with a location or a hold (`hold`: it has
    payWithinSeconds), which the stock service refuses too: a line owed waits for units of
    its goods id wherever they arrive, and a hold's clock would run out before they do."""
    if not isinstance(fill, str) or fill not in FILLS:
        raise BadFill(f'fill: must be "{ALL_OR_NOTHING}" or "{PARTIAL}" (or "{BACKORDER}")', "fill")
    named: dict[str, str | None] = {}
    for goods_id, location in lines:
        if goods_id in named and named[goods_id] != location:
            raise BadFill(
                f"items: the lines of {goods_id} name different locations (one line per goods "
                "id is taken from one location, or wherever the stock service allocates it)",
                "items",
                [goods_id],
            )
        named[goods_id] = location
    located = {g: loc for g, loc in named.items() if loc is not None}
    if fill == BACKORDER and located:
        raise BadFill(
            "items[].location: fill=backorder takes no named location (a line owed waits for "
            "units of its goods id wherever they arrive)",
            "location",
            sorted(located),
        )
    if fill == BACKORDER and hold:
        raise BadFill(
            "payWithinSeconds: fill=backorder takes no hold (the units owed may come after "
            "the time to pay has run out)",
            "payWithinSeconds",
        )
    return Fill(fill == PARTIAL, located, fill == BACKORDER)


@dataclass(frozen=True)
class Filled:
    """What a deducted flag filled of an order: units per goods id (0: nothing), and where the
    stock service took them from (its allocations, as it answered them)."""

    lines: Mapping[str, int]
    allocations: tuple[tuple[str, str, int], ...] = ()  # (goods id, location, units)

    def shortfalls(self, ordered: Mapping[str, int]) -> list[dict[str, Any]]:
        """Each line not filled whole: what was asked, and what was filled of it."""
        return [
            {"goodsId": g, "requested": n, "available": self.lines.get(g, 0)}
            for g, n in sorted(ordered.items())
            if self.lines.get(g, 0) < n
        ]

    def allocations_json(self) -> list[dict[str, Any]]:
        return [{"goodsId": g, "location": loc, "num": n} for g, loc, n in self.allocations]


def flows_by_goods(flows: Any) -> dict[str, int] | None:
    """Units per goods id of a flag's flows (its deduction's answer, GET /stockFlow, GET
    /flags); None when there are none, or they are not flows."""
    if not isinstance(flows, list) or not flows:
        return None
    try:
        return {str(f["goodsId"]): int(f["num"]) for f in flows}
    except (KeyError, TypeError, ValueError):
        return None


def filled_from(lines: Mapping[str, int], flows: Any, partial: bool) -> dict[str, int] | None:
    """The units filled of each line, from the flows of the flag decided `deducted`: all or
    nothing, the flows are exactly the lines; partial, a goods id of the order each, 1 to its
    units, and a line with no flow was filled with none. None when the flows are not a
    deduction of these lines (none at all, or other goods, or more units): never guessed."""
    found = flows_by_goods(flows)
    if found is None:
        return None
    if not partial:
        return found if found == dict(lines) else None
    if any(g not in lines or not 0 < n <= lines[g] for g, n in found.items()):
        return None
    return {g: found.get(g, 0) for g in lines}


def allocations_from(answer: Any) -> tuple[tuple[str, str, int], ...]:
    """The `allocations` of a deducted answer (reduceStock, GET /flags/{flag}), as
    (goods id, location, units); none when it has none or they are not allocations. Those of
    a flag taken wholly from the `default` location say nothing a stack without locations
    would not: not kept, so an ordinary order writes what it always wrote."""
    found = answer.get("allocations") if isinstance(answer, dict) else None
    if not isinstance(found, list):
        return ()
    try:
        kept = tuple(
            (str(a["goodsId"]), str(a["location"]), int(a["num"]))
            for a in found
            if int(a["num"]) > 0
        )
    except (KeyError, TypeError, ValueError):
        return ()
    if all(loc == DEFAULT_LOCATION for _, loc, _ in kept):
        return ()
    return kept


def filled_of(
    lines: Mapping[str, int], fill: Fill, flows: Any, answer: Any = None
) -> Filled | None:
    """What a deducted flag filled of an order (None: the flows are not its lines), with the
    allocations `answer` carries. (A backorder deducted whole is all or nothing; one that owes
    units is read by order_service/core/backorders.py.)"""
    filled = filled_from(lines, flows, fill.partial)
    return None if filled is None else Filled(filled, allocations_from(answer))


def items_json(
    lines: Mapping[str, int],
    fill: Fill,
    filled: Mapping[str, int | None],
    failed: bool = False,
) -> list[dict[str, Any]]:
    """An order's lines as its answers give them: `num` ordered, and, for an order that asked
    for a fill or a location, `filled` (null while unknown; 0 for each of a FAILED order) and
    the line's `location`. A plain order's lines stay {goodsId, num}: filled whole once it is
    deducted, so nothing is added to what its answers always said."""
    items: list[dict[str, Any]] = []
    for goods_id, num in sorted(lines.items()):
        item: dict[str, Any] = {"goodsId": goods_id, "num": num}
        if not fill.plain:
            got = filled.get(goods_id)
            item["filled"] = 0 if failed and got is None else got
            if goods_id in fill.locations:
                item["location"] = fill.locations[goods_id]
        items.append(item)
    return items


def owed_json(lines: Mapping[str, int], filled: Mapping[str, int | None]) -> list[dict[str, Any]]:
    """A BACKORDERED order's `backordered`: each line's units still owed (ordered, less what
    it has had: taken on hand when decided, and handed to it since as last recorded)."""
    owed = {g: n - (filled.get(g) or 0) for g, n in sorted(lines.items())}
    return [{"goodsId": g, "num": n} for g, n in owed.items() if n > 0]


def answer_fields(
    lines: Mapping[str, int],
    fill: Fill,
    filled: Mapping[str, int | None],
    allocations: Sequence[tuple[str, str, int]],
    failed: bool = False,
    owing: bool = False,
) -> dict[str, Any]:
    """What genOrder's answer adds for an order that asked for a fill or a location (its
    `fill` and lines), and for one the stock service answered allocations of; nothing for a
    plain order taken from `default`. `owing`: a BACKORDERED order, its units owed per line."""
    fields: dict[str, Any] = {}
    if not fill.plain:
        fields["fill"] = fill.mode
        fields["items"] = items_json(lines, fill, filled, failed)
    if allocations:
        fields["allocations"] = Filled({}, tuple(allocations)).allocations_json()
    if owing:
        fields["backordered"] = owed_json(lines, filled)
    return fields
