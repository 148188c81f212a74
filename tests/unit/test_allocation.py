"""The allocation rule (stock_service/core/allocation.py) held against brute force on small
cases: never a split where one location could fill the line; one location for the whole order
whenever one could (the best); otherwise as few locations as any assignment of whole lines
needs; nothing from an inactive location or beyond what a location has; all or nothing unless
partial, and partial filling exactly what could be filled."""

from __future__ import annotations

from itertools import combinations

from hypothesis import given, settings
from hypothesis import strategies as st

from stock_service.core.allocation import Decision, Line, Location, allocate

IDS = ["L0", "L1", "L2", "L3"]
GOODS = ["g1", "g2", "g3", "g4", "g5", "g6"]
INACTIVE = "Lx"  # has units, is never passed as a location: must never be allocated from


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[Line], list[Location], dict[str, dict[str, int]], bool]:
    ids = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=4, unique=True))
    locations = [Location(draw(st.integers(0, 3)), i) for i in ids]
    goods = draw(st.lists(st.sampled_from(GOODS), min_size=1, max_size=6, unique=True))
    named = st.one_of(st.none(), st.none(), st.sampled_from([*IDS, INACTIVE]))
    lines = [Line(g, draw(st.integers(1, 6)), draw(named)) for g in goods]
    available = {g: {loc: draw(st.integers(0, 7)) for loc in [*IDS, INACTIVE]} for g in GOODS}
    return lines, locations, available, draw(st.booleans())


def units_by_line(decision: Decision) -> dict[str, int]:
    got: dict[str, int] = {}
    for a in decision.allocations:
        got[a.goods_id] = got.get(a.goods_id, 0) + a.units
    return got


def fits_whole(line: Line, loc: str, available: dict[str, dict[str, int]]) -> bool:
    return available[line.goods_id][loc] >= line.units


@settings(max_examples=600, deadline=None)
@given(cases())
def test_the_rule_holds_against_brute_force(
    case: tuple[list[Line], list[Location], dict[str, dict[str, int]], bool],
) -> None:
    lines, locations, available, partial = case
    active = [loc.location_id for loc in sorted(locations)]
    decision = allocate(lines, locations, available, partial)
    got = units_by_line(decision)

    # Where units come from: active locations only, never more than they have, named lines
    # from their location only, each line at most what it wants.
    for a in decision.allocations:
        assert a.location_id in active and a.units > 0
        assert a.units <= available[a.goods_id][a.location_id]
    for line in lines:
        assert got.get(line.goods_id, 0) <= line.units
        if line.location is not None:
            assert all(
                a.location_id == line.location
                for a in decision.allocations
                if a.goods_id == line.goods_id
            )

    # What can be filled, by brute force: a named line from its location, another from all.
    def can(line: Line) -> int:
        if line.location is not None:
            here = available[line.goods_id][line.location] if line.location in active else 0
            return min(here, line.units)
        return min(sum(available[line.goods_id][loc] for loc in active), line.units)

    fillable = all(can(line) == line.units for line in lines)
    if partial:
        assert got == {line.goods_id: can(line) for line in lines if can(line)}
        assert decision.refused == (not any(can(line) for line in lines))
    elif fillable:
        assert got == {line.goods_id: line.units for line in lines}
        assert not decision.shortfalls
    else:
        assert decision.refused and not decision.allocations

    if not decision.allocations:
        return  # refused: where nothing is taken from is no placement to judge
    free = [line for line in lines if line.location is None and got.get(line.goods_id)]
    whole_free = [line for line in lines if line.location is None]
    # Never a split where one location could fill the line.
    for goods_id in decision.split:
        line = next(x for x in lines if x.goods_id == goods_id)
        assert not any(fits_whole(line, loc, available) for loc in active)
    # One location for the whole order whenever one could: the best one.
    one = [loc for loc in active if all(fits_whole(x, loc, available) for x in whole_free)]
    if whole_free and one:
        used = {a.location_id for a in decision.allocations if _free(a.goods_id, whole_free)}
        assert used == {one[0]}
        return
    # Else as few locations for the lines one location can fill as any assignment needs.
    whole = [x for x in free if any(fits_whole(x, loc, available) for loc in active)]
    used = {
        a.location_id for a in decision.allocations if any(a.goods_id == x.goods_id for x in whole)
    }
    assert len(used) == _fewest(whole, active, available)


def _free(goods_id: str, free: list[Line]) -> bool:
    return any(x.goods_id == goods_id for x in free)


def _fewest(lines: list[Line], active: list[str], available: dict[str, dict[str, int]]) -> int:
    if not lines:
        return 0
    for size in range(1, len(active) + 1):
        for subset in combinations(active, size):
            if all(any(fits_whole(x, loc, available) for loc in subset) for x in lines):
                return size
    raise AssertionError("every line here fits some location")


def test_a_line_no_location_can_fill_is_split_by_priority() -> None:
    locations = [Location(2, "north"), Location(1, "south"), Location(3, "east")]
    available = {"g": {"north": 3, "south": 2, "east": 9}}
    decision = allocate([Line("g", 5)], locations, available)
    # east alone could: never split then.
    assert [(a.location_id, a.units) for a in decision.allocations] == [("east", 5)]
    available["g"]["east"] = 1
    decision = allocate([Line("g", 5)], locations, available)
    assert [(a.location_id, a.units) for a in decision.allocations] == [
        ("south", 2),
        ("north", 3),
    ]
    assert decision.split == {"g"}


def test_the_order_is_kept_whole_at_one_location_rather_than_at_each_lines_best() -> None:
    locations = [Location(1, "a"), Location(2, "b")]
    available = {"g1": {"a": 5, "b": 5}, "g2": {"a": 0, "b": 5}}
    decision = allocate([Line("g1", 2), Line("g2", 2)], locations, available)
    assert {a.location_id for a in decision.allocations} == {"b"}


def test_all_or_nothing_refuses_whole_and_partial_fills_what_there_is() -> None:
    locations = [Location(1, "a")]
    available = {"g1": {"a": 5}, "g2": {"a": 1}}
    lines = [Line("g1", 2), Line("g2", 3)]
    refused = allocate(lines, locations, available)
    assert refused.refused and not refused.allocations
    partly = allocate(lines, locations, available, partial=True)
    assert units_by_line(partly) == {"g1": 2, "g2": 1}
    assert [(s.goods_id, s.wanted, s.filled) for s in partly.shortfalls] == [("g2", 3, 1)]


def test_the_fewest_locations_are_found_where_a_greedy_choice_takes_more() -> None:
    """c fills four lines of six, more than any other: a greedy pick takes it first and then
    needs two more; a and b fill all six together, each only at a lower priority."""
    locations = [Location(1, "c"), Location(2, "a"), Location(3, "b")]
    holds = {"c": {1, 2, 4, 5}, "a": {1, 2, 3}, "b": {4, 5, 6}}
    available = {
        f"g{n}": {loc: 1 if n in ns else 0 for loc, ns in holds.items()} for n in range(1, 7)
    }
    decision = allocate([Line(f"g{n}", 1) for n in range(1, 7)], locations, available)
    assert {a.location_id for a in decision.allocations} == {"a", "b"}
    assert not decision.split
