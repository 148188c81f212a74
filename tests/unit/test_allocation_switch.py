"""The allocation rule past EXACT_LOCATIONS useful locations (those that can each fill one of
the order's lines alone): the code chooses the covering set greedily, and L5's checker
(inventory/check/allocation_rule.py) replays that same switch, so a correct allocation past it
is passed and a wrong one caught; before, the checker always searched exactly and flagged the
rule's own greedy choice. The search's cost under the lock at its limits is measured by
inventory/bench/allocation_cost.py (100 lines over a thousand locations: about 560 ms of CPU
before, milliseconds now)."""

from __future__ import annotations

import pytest

from inventory.bench.allocation_cost import cases, main, measure
from inventory.check.allocation_rule import Asked, check_rule_held
from inventory.check.ledger_replay import DEDUCTED, SET, Line
from stock_service.core.allocation import EXACT_LOCATIONS, Location, allocate
from stock_service.core.allocation import Line as Wanted

# r fills four lines, p and q three each: greedy takes r, then p, then q (three locations);
# p and q alone cover every line. Nine fillers that fill g1 only make twelve useful locations.
FITS = {
    "r": {"g1", "g2", "g4", "g5"},
    "p": {"g1", "g2", "g3"},
    "q": {"g4", "g5", "g6"},
    **{f"f{i}": {"g1"} for i in range(9)},
}
PRIORITY = {"r": 1, "p": 2, "q": 3, **{f"f{i}": 4 + i for i in range(9)}}
GOODS = [f"g{i}" for i in range(1, 7)]
LEVELS = {g: {loc: 5 if g in fits else 0 for loc, fits in FITS.items()} for g in GOODS}


def ruled(active: set[str]) -> dict[str, list[str]]:
    """Where the code takes each line (5 units each) from, with these locations active."""
    locations = [Location(PRIORITY[loc], loc) for loc in FITS if loc in active]
    decision = allocate([Wanted(g, 5) for g in GOODS], locations, LEVELS)
    assert not decision.shortfalls and not decision.split
    taken: dict[str, list[str]] = {}
    for a in decision.allocations:
        taken.setdefault(a.goods_id, []).append(a.location_id)
    return taken


def judged(taken: dict[str, list[str]], active: set[str] | None = None) -> list[str]:
    """L5's verdict on one order ("o") that took each line from `taken`, levels as LEVELS,
    with these locations active (all, when None)."""
    ledger = {}
    for g in GOODS:
        seeds = [Line(i, SET, ((loc, n),)) for i, (loc, n) in enumerate(LEVELS[g].items(), 1)]
        [where] = taken[g]
        ledger[g] = [*seeds, Line(len(seeds) + 1, DEDUCTED, ((where, -5),), "o")]
    places = {loc: (PRIORITY[loc], active is None or loc in active) for loc in FITS}
    result = check_rule_held(ledger, places, {"o": Asked(dict.fromkeys(GOODS, 5))})
    return list(result.numbers["problems"])


def test_past_the_switch_the_rules_greedy_allocation_is_not_flagged() -> None:
    assert len(FITS) > EXACT_LOCATIONS
    taken = ruled(set(FITS))
    assert {w for [w] in taken.values()} == {"r", "p", "q"}  # greedy: three, not the fewest
    assert judged(taken) == []


def test_up_to_the_switch_the_fewest_locations_are_used_and_more_is_flagged() -> None:
    few = {"r", "p", "q"}
    taken = ruled(few)
    assert {w for [w] in taken.values()} == {"p", "q"}  # the exact search: two
    assert judged(taken, few) == []
    greedy = ruled(set(FITS))  # r, p and q: more than the two that could do
    [problem] = judged(greedy, few)
    assert "used where 2 locations could do" in problem, problem


def test_past_the_switch_a_line_taken_off_the_greedy_cover_is_flagged() -> None:
    taken = ruled(set(FITS))
    taken["g1"] = ["f0"]  # f0 can fill it, but the rule's cover is r, p, q
    problems = judged(taken)
    assert len(problems) == 1 and "o/g1" in problems[0] and "greedy" in problems[0], problems


def test_the_cost_bench_allocates_a_hundred_lines_at_the_limits_and_prints_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The cost is measured by a bench (python -m inventory.bench.allocation_cost), never a
    timed test; here its cases are run once: every line filled, a figure printed per case."""
    spent = measure(1)
    assert set(spent) == set(cases()) and all(len(s) == 1 for s in spent.values())
    main(["--rounds", "1"])
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 2 and all("CPU median" in line for line in printed), printed
