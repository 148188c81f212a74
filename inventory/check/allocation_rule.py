"""L5, the allocation rule held (docs/locations.md; stock_service/core/allocation.py states it),
judged from the ledger alone: each goods id's lines replayed in seq order per location
(ledger_replay.py) give every location's level just before each deduction line, exactly the
levels the stock service decided it against (a goods id's lines are written under its lock in
the order they were decided, and the lines of other goods ids never move its levels).

For every deduction line, whatever its order:
- nothing taken from an inactive location;
- split across locations only when no single active location had the line's units just
  before it (the units it took: all or nothing, the line's; partial, no fewer than the line's
  when it was filled whole, and all there was otherwise), and then by priority: each location
  emptied in turn, best first, until the line had its units.

For the deductions whose order the order database has (`asked`: its lines, the locations they
named, whether it took a partial fill), the rest of the rule, exactly too, since every goods id
of the order has its level at that moment replayed:
- a line that named its location was taken from there alone;
- when one active location could fill all the other lines, they were all taken from the best
  such location;
- else each of those lines that some location could fill alone was taken from one that could,
  using no more locations than the fewest that cover them; past EXACT_LOCATIONS useful
  locations (those that could each fill one of those lines alone), the rule's greedy cover,
  replayed: the location that fills the most lines still open (the best priority among
  equals), then the next, each line taken from the best location of that cover it fits.
An order with a line that named no location and was filled with nothing has no ledger line for
that goods id, so its level then is unknown: only its other lines are judged (the first list
above), and the report counts such orders as not judged whole.

The locations' priorities and active flags are those read at the end (`places`): sound when
nothing changed them meanwhile, which the caller must know (a chaos run sets them before its
load and flips none)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

from inventory.check.ledger_replay import DEDUCTED, Ledger, replay
from inventory.check.result import CheckResult
from stock_service.core.allocation import EXACT_LOCATIONS

Places = Mapping[str, tuple[int, bool]]  # location -> (priority, active)


@dataclass(frozen=True)
class Asked:
    """What an order asked for: units per goods id, the locations its lines named, and
    whether it took what could be filled (fill=partial)."""

    lines: Mapping[str, int]
    locations: Mapping[str, str] = field(default_factory=dict)
    partial: bool = False


@dataclass(frozen=True)
class Taken:
    """One deduction line as the ledger replays it: units taken per location, and every
    location's level just before it."""

    parts: Mapping[str, int]
    before: Mapping[str, int]

    @property
    def units(self) -> int:
        return sum(self.parts.values())

    @property
    def used(self) -> list[str]:
        return sorted(loc for loc, n in self.parts.items() if n > 0)


def deductions(ledger: Ledger) -> dict[str, dict[str, Taken]]:
    """flag -> goods id -> its deduction line, replayed."""
    found: dict[str, dict[str, Taken]] = {}
    for goods_id, lines in ledger.items():
        for line, before in replay(lines):
            if line.kind == DEDUCTED and line.flag is not None:
                parts = {loc: -delta for loc, delta in line.parts}
                found.setdefault(line.flag, {})[goods_id] = Taken(parts, before)
    return found


def ranked(places: Places) -> list[str]:
    """The active locations, best first (lower priority, then location id)."""
    return [loc for (_, loc) in sorted((p, loc) for loc, (p, on) in places.items() if on)]


def by_priority(units: int, before: Mapping[str, int], order: Sequence[str]) -> dict[str, int]:
    """A split by priority: each location's units, best first, until the line has `units`."""
    parts: dict[str, int] = {}
    left = units
    for loc in order:
        take = min(left, max(before.get(loc, 0), 0))
        if take > 0:
            parts[loc] = take
            left -= take
    return parts


def line_problems(flag: str, goods_id: str, taken: Taken, order: Sequence[str]) -> list[str]:
    """What is wrong with one deduction line under the rule, whatever its order asked."""
    where = f"{flag}/{goods_id}"
    problems = [
        f"{where}: {taken.parts[loc]} taken from {loc}, not an active location"
        for loc in taken.used
        if loc not in order
    ]
    if len(taken.used) > 1:
        could = [loc for loc in order if taken.before.get(loc, 0) >= taken.units]
        if could:
            problems.append(
                f"{where}: {taken.units} split over {dict(taken.parts)} while {could[0]} had "
                f"{taken.before.get(could[0], 0)} (levels before: {dict(taken.before)})"
            )
        elif {k: v for k, v in taken.parts.items() if v} != by_priority(
            taken.units, taken.before, order
        ):
            problems.append(f"{where}: split {dict(taken.parts)} not by priority {order}")
    return problems


def fewest(options: Sequence[set[str]]) -> int:
    """The fewest locations that hold one option of every line (a brute force: a handful)."""
    places = sorted(set().union(*options)) if options else []
    for size in range(1, len(places) + 1):
        for subset in combinations(places, size):
            if all(o.intersection(subset) for o in options):
                return size
    return 0


def greedy_cover(options: Sequence[set[str]], order: Sequence[str]) -> list[str]:
    """The rule's cover past EXACT_LOCATIONS useful locations: the location that fills the
    most lines still open (the best priority among equals), then the next; in priority
    order."""
    rank = {loc: i for i, loc in enumerate(order)}
    open_lines = [o for o in options if o]
    cover: list[str] = []
    while open_lines:
        best = max(
            set().union(*open_lines),
            key=lambda loc: (sum(loc in o for o in open_lines), -rank[loc]),
        )
        cover.append(best)
        open_lines = [o for o in open_lines if best not in o]
    return sorted(cover, key=rank.__getitem__)


def cover_problems(
    flag: str,
    fitting: Mapping[str, list[str]],
    used: Mapping[str, list[str]],
    order: Sequence[str],
) -> list[str]:
    """Whether the lines that some location could fill alone (`fitting`: each one's locations)
    used no more locations than the rule's cover: the fewest, searched exactly, up to
    EXACT_LOCATIONS useful locations; past it, the greedy cover, replayed line by line."""
    options = [set(f) for f in fitting.values()]
    useful = set().union(*options) if options else set()
    if len(useful) <= EXACT_LOCATIONS:
        chosen = {used[g][0] for g in fitting if used[g]}
        least = fewest(options)
        if len(chosen) > least:
            return [f"{flag}: {sorted(chosen)} used where {least} locations could do"]
        return []
    cover = greedy_cover(options, order)
    problems = []
    for g, fits in fitting.items():
        want = next(loc for loc in cover if loc in fits)
        if used[g] != [want]:
            problems.append(
                f"{flag}/{g}: past {EXACT_LOCATIONS} useful locations the greedy cover {cover} "
                f"takes it from {want}, taken from {used[g]}"
            )
    return problems


def order_problems(
    flag: str, lines: Mapping[str, Taken], asked: Asked, order: Sequence[str]
) -> tuple[list[str], bool]:
    """What is wrong with an order's allocation as a whole; and whether it could be judged
    whole (every line that named no location has its ledger line)."""
    problems = [
        f"{flag}/{g}: named {loc}, taken from {lines[g].used}"
        for g, loc in asked.locations.items()
        if g in lines and lines[g].used != [loc]
    ]
    free = [g for g in asked.lines if g not in asked.locations]
    if not free or any(g not in lines for g in free):
        return problems, not free
    fits = {
        g: [loc for loc in order if lines[g].before.get(loc, 0) >= asked.lines[g]] for g in free
    }
    whole = next((loc for loc in order if all(loc in fits[g] for g in free)), None)
    if whole is not None:
        wrong = {g: lines[g].used for g in free if lines[g].used != [whole]}
        if wrong:
            problems.append(f"{flag}: {whole} could fill every line, yet taken from {wrong}")
        return problems, True
    fitting = [g for g in free if fits[g]]
    for g in fitting:
        if len(lines[g].used) != 1 or lines[g].used[0] not in fits[g]:
            alone = f"{fits[g]} could fill it alone"
            problems.append(f"{flag}/{g}: {alone}, taken from {lines[g].used}")
    used = {g: lines[g].used for g in fitting}
    problems += cover_problems(flag, {g: fits[g] for g in fitting}, used, order)
    return problems, True


def check_rule_held(
    ledger: Ledger, places: Places, asked: Mapping[str, Asked] | None = None
) -> CheckResult:
    order = ranked(places)
    taken = deductions(ledger)
    asked = asked or {}
    problems: list[str] = []
    splits = judged = partly = 0
    for flag, lines in taken.items():
        for goods_id, line in lines.items():
            splits += len(line.used) > 1
            problems += line_problems(flag, goods_id, line, order)
        if flag in asked:
            found, whole = order_problems(flag, lines, asked[flag], order)
            problems += found
            judged += whole
            partly += not whole
    count = sum(len(lines) for lines in taken.values())
    detail = (
        f"{count} deduction lines replayed over {len(order)} active locations, {splits} split "
        f"(each only when no one location had its units, by priority); {judged} orders judged "
        f"whole (named lines, one location for all, fewest locations), {partly} by their "
        f"filled lines only; {len(problems)} against the rule"
    )
    return CheckResult(
        "L5",
        "the allocation rule held",
        not problems,
        detail if not problems else f"{len(problems)} against the rule: {'; '.join(problems[:3])}",
        {
            "lines": count,
            "splits": splits,
            "orders_judged": judged,
            "orders_judged_by_lines": partly,
            "problems": problems[:20],
        },
    )
