"""Run spin on the locations' model (model/locations.pml): stock in two locations, an order's
allocation decided under the lock and written under the fence, a transfer moved leg by leg.
Intact it has no violation, and each guard removed yields its counterexample: a split not
needed, two locations where one fills the order, a leg applied twice, one reference taken out
twice, a lost update (but NO_LEG_CAS, which the state read under the lock and the fence cover:
expected clean). Needs spin and gcc; missing, this fails (it does not skip). About 20 s."""

from __future__ import annotations

from pathlib import Path

import pytest

from inventory.model_check import LOCATION_VARIANTS, Result, Variant, check_all, check_variant
from inventory.model_location_variants import MODEL
from inventory.model_map import LOCATION_ACTIONS
from tests.unit.model_runs import assert_counterexample, assert_intact, assert_macros_known
from tests.unit.test_model_check import step_index
from tests.unit.test_model_map import resolve

MODEL_FILE = Path(__file__).resolve().parents[2] / "model" / MODEL


@pytest.fixture(scope="module")
def results() -> dict[str, Result]:
    return {r.variant: r for r in check_all(variants=LOCATION_VARIANTS)}


def probe(*macros: str) -> Result:
    """A probe of the intact model: an assertion that fails where the story happens."""
    return check_variant(Variant(macros[-1], macros, False, "a probe", model=MODEL, optimize=False))


@pytest.mark.parametrize(
    ("world", "at_least"), [("locations", 500_000), ("locations two pauses", 2_000_000)]
)
def test_each_world_intact_has_no_violation(
    results: dict[str, Result], world: str, at_least: int
) -> None:
    # explored, not cut short (0.91 and 4.0 million states when written)
    assert_intact(results[world], at_least)


@pytest.mark.parametrize(
    "variant", [v.name for v in LOCATION_VARIANTS if v.expect_violation], ids=str
)
def test_each_guard_removed_gives_a_counterexample(
    results: dict[str, Result], variant: str
) -> None:
    assert_counterexample(results[variant], variant)


def test_every_variant_is_as_expected(results: dict[str, Result]) -> None:
    assert [name for name, r in results.items() if not r.ok] == []


def test_each_variant_s_macros_are_the_model_s() -> None:
    """A macro the model does not know compiles the intact model: an expected-clean variant
    (NO_LEG_CAS) would pass for nothing."""
    assert_macros_known(MODEL_FILE, LOCATION_VARIANTS)


def test_a_greedy_allocation_splits_a_line_one_location_could_fill(
    results: dict[str, Result],
) -> None:
    """Taking a line by priority until it is filled: N has 1 of B's 2 units, S has 2; the
    greedy rule takes 1 from N and 1 from S, where S alone would have filled it."""
    trace = results["GREEDY_SPLIT"].trace
    _, decided = step_index(trace, r"order B, on X N (\d) S (\d), .*allocates X 2: N (\d) S (\d)")
    have_n, have_s, take_n, take_s = (int(g) for g in decided.groups())
    assert take_n > 0 and take_s > 0  # split
    assert have_s >= 2 or have_n >= 2  # one location could fill it
    assert "split_not_needed" in trace[-1]


def test_a_line_by_line_allocation_uses_two_locations_where_one_fills_the_order(
    results: dict[str, Result],
) -> None:
    """Each line from its own best location: A's X from N (priority 0) and its Y from S, while
    S holds both lines."""
    trace = results["PER_LINE"].trace
    _, decided = step_index(
        trace, r"order A, on X N \d S (\d), Y N \d S (\d): allocates X 1: N 1 S 0, Y 1: N 0 S 1"
    )
    assert int(decided.group(1)) >= 1 and int(decided.group(2)) >= 1  # S fills the order
    assert "two_locations_not_needed" in trace[-1]


def test_a_leg_served_whatever_the_state_is_applied_twice(results: dict[str, Result]) -> None:
    """No state read under the lock, no compare-and-set, no unique (transfer, leg): a second
    receive (or a cancel) reads the transfer received and puts the unit in again."""
    trace = results["LEG_NOT_ONCE"].trace
    out, _ = step_index(trace, r"writes the out leg")
    first, _ = step_index(trace, r"writes the in leg")
    read, _ = step_index(trace, r"reads transfer (RECEIVED|CANCELLED)")
    again = max(i for i, step in enumerate(trace) if "writes the in leg" in step)
    assert out < first < read < again
    assert "in_legs<=1" in trace[-1]


def test_a_post_served_whatever_its_reference_takes_the_units_out_twice(
    results: dict[str, Result],
) -> None:
    trace = results["OUT_NOT_ONCE"].trace
    outs = [i for i, step in enumerate(trace) if "writes the out leg" in step]
    assert len(outs) == 2
    read, _ = step_index(trace, r"POST /transfers \(attempt \d\) takes the lock.*IN_TRANSIT")
    assert outs[0] < read < outs[1]
    assert "out_legs<=1" in trace[-1]


def test_an_unfenced_write_lands_on_a_read_from_before_another_write(
    results: dict[str, Result],
) -> None:
    """A holder paused past its session commits on its read; the newer holder, which read
    before that commit, writes on its own read over it: a location's level no longer replays
    from its allocations and legs (units sold or taken out twice)."""
    trace = results["LOCATIONS_NO_FENCE"].trace
    paused, _ = step_index(trace, r"is paused past its session")
    newer, _ = step_index(trace, r"takes the lock, token 2")
    stale, _ = step_index(trace, r"with token 1")
    over, _ = step_index(trace, r"with token 2")
    assert paused < newer < stale < over
    assert "alloc[" in trace[-1] and "legs[" in trace[-1]  # the location's replay, broken


def test_the_leg_s_compare_and_set_alone_is_covered_by_the_read_under_the_fence(
    results: dict[str, Result],
) -> None:
    covered = results["NO_LEG_CAS"]
    assert covered.completed and covered.errors == 0
    assert covered.states == results["locations"].states  # the same world, explored whole


def test_intact_a_needed_split_is_committed() -> None:
    """The intact model commits a split (a probe, WITNESS_SPLIT): B's 2 units where neither
    location has 2 left, so "no violation" covers the split rule, not a world without splits."""
    witness = probe("WITNESS_SPLIT")
    assert witness.errors > 0, "a split is unreachable"
    _, decided = step_index(witness.trace, r"order B, on X N (\d) S (\d), .*allocates X 2: N 1 S 1")
    assert int(decided.group(1)) < 2 and int(decided.group(2)) < 2
    step_index(witness.trace, r"commits with token \d")


def test_intact_a_stale_leg_meets_the_fence_after_another_leg() -> None:
    """A holder reads the transfer in transit and loses the lock; another leg is taken; its
    write is then refused or read again (a probe, WITNESS_STALE_LEG): what carries each leg once
    without the state's compare-and-set."""
    witness = probe("WITNESS_STALE_LEG")
    assert witness.errors > 0, "a stale leg meeting the fence is unreachable"
    trace = witness.trace
    read, _ = step_index(trace, r"takes the lock, token \d: reads transfer IN_TRANSIT")
    taken, _ = step_index(trace, r"writes the in leg")
    met, _ = step_index(trace, r"(refused by the fence|overtaken by an older holder)")
    assert read < taken < met


@pytest.mark.parametrize(("action", "path"), sorted(LOCATION_ACTIONS.items()))
def test_each_action_of_the_locations_model_names_a_function_that_exists(
    action: str, path: str
) -> None:
    assert callable(resolve(path)), f"{action}: {path} is not a function"
