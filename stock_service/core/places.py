"""Where a goods id's units are: its level at each location, as a plan moves them (pure).

The goods id's total level is the ledger's (stock.num); a NAMED location has its own level
(stock_location); the `default` location has the rest: the total less the named levels. So a
goods id that never names a location has all of its stock in `default`, and a plan that moves
it writes nothing per location."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from stock_service.core.allocation import Location

DEFAULT = "default"


@dataclass(frozen=True)
class Place:
    """A location as read: its priority (lower first) and whether it may be allocated from."""

    location_id: str
    priority: int = 0
    active: bool = True


DEFAULT_PLACE = Place(DEFAULT)


def ranked(places: Mapping[str, Place]) -> list[Location]:
    """The active locations, best first (the default one unless a row says otherwise)."""
    every = {DEFAULT: DEFAULT_PLACE, **places}
    return sorted(Location(p.priority, p.location_id) for p in every.values() if p.active)


def parts_text(parts: Iterable[tuple[str, int]]) -> str | None:
    """A ledger line's locations, for its stock event: `north`, or a split's `north:3,south:2`."""
    parts = list(parts)
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0][0]
    return ",".join(f"{loc}:{abs(delta)}" for loc, delta in parts)


def units_text(parts: Iterable[tuple[str, int]]) -> str:
    """Where units were taken from, always with the units: `north:3`, `north:3,south:2` (a
    location id may hold a colon, never a comma: the last colon of each part is the one)."""
    return ",".join(f"{loc}:{abs(delta)}" for loc, delta in parts)


def parts_of(text: str) -> list[tuple[str, int]]:
    """units_text read back."""
    found = []
    for part in text.split(","):
        loc, _, num = part.rpartition(":")
        found.append((loc, int(num)))
    return found


class Shelves:
    """The named locations' levels and held units of the goods ids of one plan, running.
    `totals`: the plan's running total levels (shared, moved by the ledger)."""

    def __init__(
        self,
        named: Mapping[str, Mapping[str, int]],
        named_held: Mapping[str, Mapping[str, int]],
        totals: Mapping[str, int],
    ) -> None:
        self.named = {g: dict(levels) for g, levels in named.items()}
        self.named_held = {g: dict(held) for g, held in named_held.items()}
        self.totals = totals
        self.changed: set[tuple[str, str]] = set()  # (goods id, named location) moved
        self.held: dict[tuple[str, str], int] = {}  # the change of each named held count
        self.read = {(g, loc) for g, levels in named.items() for loc in levels}

    def has_named(self, goods_id: str) -> bool:
        return bool(self.named.get(goods_id))

    def level(self, goods_id: str, location: str) -> int:
        named = self.named.get(goods_id, {})
        if location == DEFAULT:
            return self.totals.get(goods_id, 0) - sum(named.values())
        return named.get(location, 0)

    def levels(self, goods_id: str, locations: Iterable[str]) -> dict[str, int]:
        return {loc: self.level(goods_id, loc) for loc in locations}

    def move(self, goods_id: str, location: str, delta: int) -> None:
        """A named location's level moved by `delta` (call before the ledger moves the total);
        the default location's follows the total by itself."""
        if location == DEFAULT:
            return
        named = self.named.setdefault(goods_id, {})
        named[location] = named.get(location, 0) + delta
        self.changed.add((goods_id, location))

    def hold(self, goods_id: str, location: str, units: int) -> None:
        if location == DEFAULT:
            return
        key = (goods_id, location)
        self.held[key] = self.held.get(key, 0) + units
        self.changed.add(key)

    def rows(self) -> list[dict[str, object]]:
        """The named levels this plan moved: one row each (goods id, location, level, the
        change of its held units, and `new`: no row was read for it)."""
        return [
            {
                "goods_id": g,
                "location_id": loc,
                "num": self.named[g][loc],
                "held": self.held.get((g, loc), 0),
                "new": (g, loc) not in self.read,
            }
            for g, loc in sorted(self.changed)
        ]
