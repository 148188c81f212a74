"""Which location each line of an order is taken from: the allocation rule, as pure logic (no
database, no lock). The stock service decides it under the goods ids' lock, against the levels
it read there, so the rule never races anything.

The rule, in order:

1. A line that names its location is taken from that location alone (or not at all).
2. The other lines come from **one location for the whole order** when any active location can
   fill them all: the best such location (lowest priority number, then location id).
3. Else **each line from one location** where one can fill it, using as few locations for the
   order as possible (an exact search of the smallest set of locations covering those lines,
   ties going to the best priorities; beyond `EXACT_LOCATIONS` useful locations, those that
   can each fill one of those lines alone, the greedy choice of the location that fills the
   most lines still open, stated as such).
4. A line **is split** across locations only when no single location can fill it: it takes
   each active location's units in priority order until it is filled.

What cannot be filled is a shortfall: with `partial` the rest is still allocated and the
shortfall answered per line; otherwise (all or nothing) one shortfall refuses the order and
nothing is allocated. Lines are per goods id and goods ids never share a level, so the lines of
an order never compete with each other for units; the rule only decides where each is taken.

Why not a library: the shops' engines (Saleor's allocation strategy, Magento's source selection)
come with their frameworks; the rule is thirty lines and must be checked by a property test
against a brute-force search on small cases (tests/unit/test_allocation.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

# More useful locations than this (each able to fill one of the order's lines alone) and the
# smallest covering set is chosen greedily: the exact search's cost, under the lock, grows as
# 2^n. L5's checker (inventory/check/allocation_rule.py) applies the same switch.
EXACT_LOCATIONS = 10


@dataclass(frozen=True, order=True)
class Location:
    """An active location (an inactive one is never allocated from, so it is not passed)."""

    priority: int  # lower first
    location_id: str


@dataclass(frozen=True)
class Line:
    goods_id: str
    units: int
    location: str | None = None  # named by the buyer: from there or not at all


@dataclass(frozen=True)
class Allocation:
    goods_id: str
    location_id: str
    units: int


@dataclass(frozen=True)
class Shortfall:
    goods_id: str
    wanted: int
    filled: int  # what could be allocated of it (0 unless partial)


@dataclass(frozen=True)
class Decision:
    allocations: tuple[Allocation, ...] = ()
    shortfalls: tuple[Shortfall, ...] = ()
    split: frozenset[str] = field(default_factory=frozenset)  # goods ids taken from several

    @property
    def refused(self) -> bool:
        """Nothing allocated for a line that wanted units (all or nothing, or nothing at all)."""
        return bool(self.shortfalls) and not self.allocations


# available[goods_id][location_id]: units that may be allocated there (level minus held).
Available = Mapping[str, Mapping[str, int]]


def allocate(
    lines: Sequence[Line],
    locations: Sequence[Location],
    available: Available,
    partial: bool = False,
) -> Decision:
    ranked = sorted(locations)
    active = {loc.location_id for loc in ranked}
    chosen: dict[str, list[Allocation]] = {}
    short: list[Shortfall] = []
    free = [line for line in lines if line.location is None]
    for line in lines:
        if line.location is not None:
            have = available.get(line.goods_id, {}).get(line.location, 0)
            if line.location in active and have >= line.units:
                chosen[line.goods_id] = [Allocation(line.goods_id, line.location, line.units)]
            else:
                taken = min(have, line.units) if line.location in active else 0
                short.append(Shortfall(line.goods_id, line.units, taken if partial else 0))
                if partial and taken:
                    chosen[line.goods_id] = [Allocation(line.goods_id, line.location, taken)]
    whole = _one_for_all(free, ranked, available)
    if whole is not None:
        for line in free:
            chosen[line.goods_id] = [Allocation(line.goods_id, whole, line.units)]
    else:
        fits = {line.goods_id: _fitting(line, ranked, available) for line in free}
        cover = _fewest_locations([f for f in fits.values() if f], ranked)
        for line in free:
            if fits[line.goods_id]:
                where = next(loc for loc in cover if loc in fits[line.goods_id])
                chosen[line.goods_id] = [Allocation(line.goods_id, where, line.units)]
            else:
                parts = _split(line, ranked, available)
                got = sum(a.units for a in parts)
                if got < line.units:
                    short.append(Shortfall(line.goods_id, line.units, got if partial else 0))
                    if not partial:
                        continue
                if parts:
                    chosen[line.goods_id] = parts
    if short and not partial:
        return Decision(shortfalls=tuple(short))
    allocations = tuple(a for line in lines for a in chosen.get(line.goods_id, []))
    split = frozenset(g for g, parts in chosen.items() if len(parts) > 1)
    return Decision(allocations, tuple(short), split)


def _one_for_all(
    lines: Sequence[Line], ranked: Sequence[Location], available: Available
) -> str | None:
    if not lines:
        return None
    for loc in ranked:
        if all(available.get(x.goods_id, {}).get(loc.location_id, 0) >= x.units for x in lines):
            return loc.location_id
    return None


def _fitting(line: Line, ranked: Sequence[Location], available: Available) -> list[str]:
    """The locations that can fill the line alone, best first."""
    have = available.get(line.goods_id, {})
    return [loc.location_id for loc in ranked if have.get(loc.location_id, 0) >= line.units]


def _fewest_locations(options: list[list[str]], ranked: Sequence[Location]) -> list[str]:
    """A smallest set of locations holding one option of every line, best priorities first
    (each line then takes the best location of the set it fits). Searched exactly among the
    USEFUL locations (those that can fill one of the lines alone) when there are at most
    EXACT_LOCATIONS of them, else chosen greedily: the cost under the lock is bounded by
    2^EXACT_LOCATIONS x EXACT_LOCATIONS steps, or by lines x useful locations."""
    if not options:
        return []
    wanted = set().union(*options)
    useful = [loc.location_id for loc in ranked if loc.location_id in wanted]
    if len(useful) <= EXACT_LOCATIONS:
        return _exact_cover(options, useful)
    return _greedy_cover(options, useful)


def _exact_cover(options: list[list[str]], useful: list[str]) -> list[str]:
    """The first set, by size and then in combinations() order of the ranked `useful` (so in
    order of their best priorities), that holds one option of every line. Each line is a
    bit mask of its locations; `blocked[c]`: some line has all its options within the
    locations of mask c, so a set whose complement is c misses that line (computed once for
    every c, 2^n x n steps, instead of every line checked against every set)."""
    n = len(useful)
    bit = {loc: 1 << i for i, loc in enumerate(useful)}
    full = (1 << n) - 1
    blocked = [False] * (full + 1)
    for option in options:
        blocked[sum(bit[loc] for loc in option)] = True
    for i in range(n):
        step = 1 << i
        for c in range(full + 1):
            if c & step and blocked[c ^ step]:
                blocked[c] = True
    for size in range(1, n + 1):
        # combinations() of a ranked list come in order of their best priorities.
        for subset in combinations(range(n), size):
            chosen = sum(1 << i for i in subset)
            if not blocked[full & ~chosen]:
                return [useful[i] for i in subset]
    return list(useful)  # not reached: all the useful locations hold every line's option


def _greedy_cover(options: list[list[str]], useful: list[str]) -> list[str]:
    """The location that fills the most lines still open (the best priority among equals),
    then the next, until every line is held; in priority order."""
    covers = dict.fromkeys(useful, 0)  # each location: a bit per line it can fill alone
    for line, option in enumerate(options):
        for loc in option:
            covers[loc] |= 1 << line
    rank = {loc: i for i, loc in enumerate(useful)}
    open_lines = (1 << len(options)) - 1
    candidates = list(useful)
    cover: list[str] = []
    while open_lines:
        candidates = [loc for loc in candidates if covers[loc] & open_lines]
        best = max(candidates, key=lambda loc: ((covers[loc] & open_lines).bit_count(), -rank[loc]))
        cover.append(best)
        open_lines &= ~covers[best]
    return sorted(cover, key=rank.__getitem__)


def _split(line: Line, ranked: Sequence[Location], available: Available) -> list[Allocation]:
    """Units of each location in priority order until the line is filled (or they run out)."""
    have = available.get(line.goods_id, {})
    parts: list[Allocation] = []
    left = line.units
    for loc in ranked:
        take = min(left, have.get(loc.location_id, 0))
        if take > 0:
            parts.append(Allocation(line.goods_id, loc.location_id, take))
            left -= take
        if left == 0:
            break
    return parts
