"""L5, the allocation rule held, on hand-made ledgers: each goods id's lines replayed per
location (inventory/check/ledger_replay.py), every deduction judged against the levels each
location had just before it (inventory/check/allocation_rule.py). A split that one location
could have spared, a split out of priority, a named line taken elsewhere, an order spread over
more locations than needed, a unit from an inactive location: each caught; the splits the
rule makes, passed."""

from __future__ import annotations

from inventory.check.allocation_rule import Asked, check_rule_held, fewest
from inventory.check.ledger_replay import (
    ADJUSTED,
    DEDUCTED,
    LEG,
    RETURNED,
    SET,
    Line,
    lowest_since_seed,
    replay,
)

# default (0) is better than all three; near 1, mid 2, far 3
PLACES = {"default": (0, True), "near": (1, True), "mid": (2, True), "far": (3, True)}


def seeded(levels: dict[str, int]) -> list[Line]:
    """A goods id set at each location, in this order (seq 1, 2, ...)."""
    return [Line(i, SET, ((loc, n),)) for i, (loc, n) in enumerate(levels.items(), start=1)]


def take(seq: int, flag: str, parts: dict[str, int]) -> Line:
    return Line(seq, DEDUCTED, tuple(sorted((loc, -n) for loc, n in parts.items())), flag)


def verdict(ledger: dict[str, list[Line]], asked: dict[str, Asked] | None = None) -> list[str]:
    result = check_rule_held(ledger, PLACES, asked)
    assert result.ok == (not result.numbers["problems"])
    return list(result.numbers["problems"])


def test_a_split_is_passed_only_when_no_one_location_had_the_units() -> None:
    # near 2, mid 1, far 3: five units fit nowhere alone; by priority: near 2, mid 1, far 2
    ledger = {
        "a": [
            *seeded({"near": 2, "mid": 1, "far": 3}),
            take(4, "o1", {"near": 2, "mid": 1, "far": 2}),
        ]
    }
    assert verdict(ledger, {"o1": Asked({"a": 5})}) == []
    assert check_rule_held(ledger, PLACES).numbers["splits"] == 1


def test_a_needless_split_fails_even_without_the_order() -> None:
    # far had all three units: taking them from near and far split a line one location could fill
    ledger = {"a": [*seeded({"near": 1, "mid": 0, "far": 3}), take(4, "o1", {"near": 1, "far": 2})]}
    [problem] = verdict(ledger)
    assert problem.startswith("o1/a: 3 split over") and "far had 3" in problem


def test_a_split_out_of_priority_fails() -> None:
    # no one location has 4; by priority it is near 2 then mid 2, not mid 1 and far 3
    ledger = {"a": [*seeded({"near": 2, "mid": 2, "far": 3}), take(4, "o1", {"mid": 1, "far": 3})]}
    [problem] = verdict(ledger)
    assert "not by priority" in problem


def test_levels_before_a_line_follow_every_kind_of_entry() -> None:
    """A restock, a transfer's legs, a deduction and its return move the locations they name:
    the split judged after them sees the levels they left."""
    lines = [
        *seeded({"near": 3, "mid": 3}),
        Line(3, LEG, (("near", -2),)),  # near -> far, in transit
        Line(4, LEG, (("far", 2),)),  # received at far
        take(5, "o1", {"mid": 3}),
        Line(6, RETURNED, (("mid", 3),), "o1"),  # mid has its 3 back
        Line(7, ADJUSTED, (("near", 1),)),  # near 2
        take(8, "o2", {"near": 2, "mid": 2}),  # 4: near 2, mid 3, far 2: no one had 4
    ]
    before = dict(replay(lines))[lines[-1]]
    assert before == {"near": 2, "mid": 3, "far": 2}
    assert verdict({"a": lines}, {"o2": Asked({"a": 4})}) == []
    # with mid's return, mid had 3: a line of 3 split over near and mid is needless
    needless = [*lines[:-1], take(8, "o2", {"near": 2, "mid": 1})]
    assert "mid had 3" in verdict({"a": needless})[0]


def test_a_named_line_is_taken_from_its_location_alone() -> None:
    ledger = {"a": [*seeded({"near": 5, "far": 5}), take(3, "o1", {"near": 2})]}
    assert verdict(ledger, {"o1": Asked({"a": 2}, {"a": "near"})}) == []
    [problem] = verdict(ledger, {"o1": Asked({"a": 2}, {"a": "far"})})
    assert problem == "o1/a: named far, taken from ['near']"


def test_the_whole_order_from_the_best_location_that_can_fill_it() -> None:
    # near has a but not b; mid has both: both lines from mid
    a = [*seeded({"near": 5, "mid": 5}), take(3, "o1", {"mid": 2})]
    b = [*seeded({"near": 0, "mid": 1, "far": 4}), take(4, "o1", {"mid": 1})]
    asked = {"o1": Asked({"a": 2, "b": 1})}
    assert verdict({"a": a, "b": b}, asked) == []
    # a from near (the best for a alone) and b from mid: two locations where mid had both
    a_near = [*a[:2], take(3, "o1", {"near": 2})]
    [problem] = verdict({"a": a_near, "b": b}, asked)
    assert problem.startswith("o1: mid could fill every line")


def test_each_line_from_one_location_and_no_more_locations_than_needed() -> None:
    # a at near and far, b at mid and far (1 unit there), c at near and mid: no one location
    # has every line; two (near and mid) cover them all
    a = seeded({"near": 5, "far": 5})
    b = seeded({"mid": 5, "far": 1})
    c = seeded({"near": 5, "mid": 5})
    asked = {"o1": Asked({"a": 1, "b": 2, "c": 1})}

    def order(at: dict[str, str]) -> dict[str, list[Line]]:
        return {
            g: [*lines, take(3, "o1", {at[g]: asked["o1"].lines[g]})]
            for g, lines in (("a", a), ("b", b), ("c", c))
        }

    assert verdict(order({"a": "near", "b": "mid", "c": "near"})) == []
    assert verdict(order({"a": "near", "b": "mid", "c": "near"}), asked) == []
    # each line from a location that can fill it, but three locations where two do
    [problem] = verdict(order({"a": "far", "b": "mid", "c": "near"}), asked)
    assert problem == "o1: ['far', 'mid', 'near'] used where 2 locations could do"
    # b (2) from far, which had 1 of it: a line one location could fill, taken elsewhere
    problems = verdict(order({"a": "near", "b": "far", "c": "near"}), asked)
    assert "o1/b: ['mid'] could fill it alone, taken from ['far']" in problems
    # with b of 1, far has every line: the whole order from far
    asked1 = {"o1": Asked({"a": 1, "b": 1, "c": 1})}
    c_far = seeded({"near": 5, "mid": 5, "far": 1})
    ledger = {
        "a": [*a, take(3, "o1", {"far": 1})],
        "b": [*b, take(3, "o1", {"far": 1})],
        "c": [*c_far, take(4, "o1", {"far": 1})],
    }
    assert verdict(ledger, asked1) == []


def test_an_order_with_a_line_filled_with_nothing_is_judged_by_its_filled_lines() -> None:
    a = [*seeded({"near": 1, "mid": 1}), take(3, "o1", {"near": 1, "mid": 1})]
    asked = {"o1": Asked({"a": 3, "b": 2}, partial=True)}  # b: no ledger line, nothing filled
    result = check_rule_held({"a": a}, PLACES, asked)
    assert result.ok and result.numbers["orders_judged_by_lines"] == 1


def test_a_partial_line_takes_all_there_is_by_priority() -> None:
    # asked 6, there were 4 in all: near 1, mid 3 taken; no one location had 4
    a = [*seeded({"near": 1, "mid": 3}), take(3, "o1", {"near": 1, "mid": 3})]
    assert verdict({"a": a}, {"o1": Asked({"a": 6}, partial=True)}) == []


def test_nothing_is_taken_from_an_inactive_location() -> None:
    places = {**PLACES, "mid": (2, False)}
    a = [*seeded({"near": 5, "mid": 5}), take(3, "o1", {"mid": 5})]
    result = check_rule_held({"a": a}, places, {"o1": Asked({"a": 5})})
    assert not result.ok
    assert "o1/a: 5 taken from mid, not an active location" in result.numbers["problems"]


def test_the_fewest_locations_that_cover_every_line() -> None:
    assert fewest([{"near", "far"}, {"mid", "far"}]) == 1
    assert fewest([{"near"}, {"mid"}, {"near", "mid"}]) == 2
    assert fewest([]) == 0


def test_the_least_a_location_held_since_the_goods_ids_last_seed() -> None:
    lines = [
        Line(1, SET, (("near", 5),)),
        take(2, "o1", {"near": 5}),  # near 0: before the next seed
        Line(3, SET, (("mid", 4),)),  # a new seed (at another location): near 0 from here
        Line(4, ADJUSTED, (("near", 3),)),
        take(5, "o2", {"near": 1}),
    ]
    assert lowest_since_seed(lines, "near") == 0
    assert lowest_since_seed(lines, "mid") == 4
    # set to 2 where it was 2 (a delta of 0): a new seed, its least 2
    assert lowest_since_seed([*lines, Line(6, SET, (("near", 0),))], "near") == 2
    assert lowest_since_seed([], "near") is None
