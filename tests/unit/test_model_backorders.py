"""Run spin on the backorders' and reservations' model (model/backorders.pml): units owed beyond
on hand within a cap, filled oldest first by the units that arrive, and a reservation ended once
by its genOrder, its DELETE or its expiry, its units back once. Intact it has no violation, and
each guard removed yields its counterexample: a later order filled first (newest first, or a
newcomer taking a restocked unit), units left on hand while a line waits, a lost update, a
hand-over kept by a cancelled line (the cancel's read before the lock, or a stale give-up of
nothing that met no fence: GATE_ONLY_CHANGED_LEVELS), two ends of one reservation, units back
twice (but NO_HANDOVER, which the fill in the arrival's commit covers: expected clean); and per
location, a second line owing past a location's limit, a line handed units at a location it did
not name, a unit left on hand behind a line that cannot take it, the newest line served first. Needs
spin and gcc; missing, this fails (it does not skip). About 30 s of CPU."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from inventory.model_backorder_variants import BACKORDER_VARIANTS, MODEL
from inventory.model_check import Result, Variant, check_all, check_variant
from inventory.model_map import BACKORDER_ACTIONS, PENDING_BACKORDER_ACTIONS
from tests.unit.model_runs import assert_counterexample, assert_intact, assert_macros_known
from tests.unit.test_model_check import step_index
from tests.unit.test_model_map import resolve

MODEL_FILE = Path(__file__).resolve().parents[2] / "model" / MODEL


@pytest.fixture(scope="module")
def results() -> dict[str, Result]:
    return {r.variant: r for r in check_all(variants=BACKORDER_VARIANTS)}


def probe(*macros: str) -> Result:
    """A probe of the intact model: an assertion that fails where the story happens."""
    return check_variant(Variant(macros[-1], macros, False, "a probe", model=MODEL, optimize=False))


@pytest.mark.parametrize(
    ("world", "at_least"),
    [("backorders", 300_000), ("reservations", 1_500_000), ("locations", 50_000)],
)
def test_each_world_intact_has_no_violation(
    results: dict[str, Result], world: str, at_least: int
) -> None:
    # explored, not cut short (0.42 and 2.17 million states when written; the locations'
    # world 62 thousand)
    assert_intact(results[world], at_least)


@pytest.mark.parametrize(
    "variant", [v.name for v in BACKORDER_VARIANTS if v.expect_violation], ids=str
)
def test_each_guard_removed_gives_a_counterexample(
    results: dict[str, Result], variant: str
) -> None:
    assert_counterexample(results[variant], variant)


def test_every_variant_is_as_expected(results: dict[str, Result]) -> None:
    assert [name for name, r in results.items() if not r.ok] == []


def test_each_variant_s_macros_are_the_model_s() -> None:
    """A macro the model does not know compiles the intact model: an expected-clean variant
    (NO_HANDOVER) would pass for nothing."""
    assert_macros_known(MODEL_FILE, BACKORDER_VARIANTS)


def _place(trace: list[str], line: str) -> int:
    _, found = step_index(trace, rf"commits .*{line} waits \d/\d \(place (\d+)\)")
    return int(found.group(1))


def test_newest_first_fills_a_later_line_while_an_earlier_one_waits(
    results: dict[str, Result],
) -> None:
    """A and B wait; a restock's unit goes to the newer line, B, while A (an earlier place,
    which the unit could serve) still waits."""
    trace = results["FILL_NEWEST"].trace
    arrives, served = step_index(trace, r"restock \d decides: 1 unit arrives, ([ABC]) gets 1")
    later = served.group(1)
    waits = re.findall(r"([ABC]) waits \d/\d \(place (\d+)\)", trace[arrives + 1])
    places = dict(waits)
    assert any(int(p) < int(places[later]) for line, p in places.items() if line != later)
    assert "later_filled_first" in trace[-1]


def test_a_newcomer_takes_a_restocked_unit_while_an_earlier_line_waits(
    results: dict[str, Result],
) -> None:
    """The arrival put on hand, not served in its commit, and a deduction taking it without
    handing it to the line first: the later order is filled first (spree #7328's kind)."""
    trace = results["NEWCOMER_FIRST"].trace
    waiting = _place(trace, "A")
    on_hand, _ = step_index(trace, r"restock \d commits .*on hand 1, .*A waits")
    taken, newcomer = step_index(trace, r"order ([BC]) decides: takes 1 from on hand")
    assert on_hand < taken
    assert int(re.search(r"place (\d+)", trace[taken]).group(1)) > waiting  # type: ignore[union-attr]
    assert newcomer.group(1) in "BC"
    assert "later_filled_first" in trace[-1]


def test_arrivals_not_served_in_their_commit_stay_on_hand_while_a_line_waits(
    results: dict[str, Result],
) -> None:
    trace = results["FILL_NOT_IN_COMMIT"].trace
    end, _ = step_index(trace, r"^end: on hand [1-9]")
    assert "waits" in trace[end] and end == len(trace) - 2
    assert "units_on_hand_while_a_line_waits" in trace[-1]


def test_a_cancel_that_gives_back_what_it_read_before_the_lock_loses_a_hand_over(
    results: dict[str, Result],
) -> None:
    """The cancel reads what B has, a restock then hands B a unit in its commit, and the cancel
    under the lock gives back what it read before: the unit stays with the cancelled B (a
    chaos run caught the code doing so)."""
    trace = results["CANCEL_READ_BEFORE_HOLD"].trace
    read, early = step_index(trace, r"cancel of B reads what B has before the lock: (\d+)")
    handed, _ = step_index(
        trace, r"restock \d commits .*B waits [1-9]|restock \d commits .*B filled"
    )
    gives, back = step_index(trace, r"cancel of B decides: .*gives back (\d+)")
    assert read < handed < gives
    assert back.group(1) == early.group(1)
    assert "made_or_lost" in trace[-1]


def test_a_stale_give_up_of_nothing_outside_the_gate_loses_a_newer_hand_over(
    results: dict[str, Result],
) -> None:
    """The code before every hold met the gate: B waits; the cancel, under the lock, finds B
    handed nothing, so its plan writes no ledger line, and it is paused past its session; a
    restock with a newer token hands B a unit; the stale give-up then commits without meeting
    the fence: B cancelled keeping the unit, none given back, the row's units owed below zero
    (the defect two threads reproduced on the code)."""
    trace = results["GATE_ONLY_CHANGED_LEVELS"].trace
    decided, _ = step_index(trace, r"cancel of B decides: .*gives back 0")
    paused, _ = step_index(trace, r"cancel of B is paused past its session")
    handed, newer = step_index(trace, r"restock \d commits with token (\d+): .*B waits [1-9]")
    stale, older = step_index(
        trace, r"cancel of B commits with token (\d+): .*\(row: -\d\), .*B cancelled \(handed 1\)"
    )
    assert decided < paused < handed < stale
    assert int(older.group(1)) < int(newer.group(1))
    broken = " ".join(trace[stale + 1 :])
    assert "made_or_lost" in broken and "owed_below_zero" in broken


def test_an_unfenced_backorder_lands_on_a_read_from_before_another(
    results: dict[str, Result],
) -> None:
    """A holder paused past its session commits on its read after a newer holder's commit:
    two lines at one place (or units made or lost, or the cap passed)."""
    trace = results["BACKORDERS_NO_FENCE"].trace
    paused, _ = step_index(trace, r"is paused past its session")
    newer, _ = step_index(trace, r"commits with token 2")
    stale, _ = step_index(trace, r"commits with token 1")
    assert paused < newer < stale
    assert re.search(r"two_lines_one_place|made_or_lost|over_the_limit", trace[-1])


def test_the_hand_over_alone_is_covered_by_the_fill_in_the_arrival_s_commit(
    results: dict[str, Result],
) -> None:
    covered = results["NO_HANDOVER"]
    assert covered.completed and covered.errors == 0
    assert covered.states == results["backorders"].states  # the same world, explored whole


def test_without_the_state_s_compare_and_set_a_reservation_ends_twice(
    results: dict[str, Result],
) -> None:
    """Two routes read it held; one moves it, the other writes its own end over it (released
    then consumed: the units the order's and back)."""
    trace = results["STATE_NO_CAS"].trace
    first, _ = step_index(trace, r"moves it HELD -> (CONSUMED|RELEASED|EXPIRED)")
    second, _ = step_index(trace, r"moves it (CONSUMED|RELEASED|EXPIRED) -> ")
    assert first < second
    reads = [i for i, step in enumerate(trace) if "reads the reservation HELD" in step]
    assert len(reads) >= 2 and reads[1] < first  # both read before the first move
    assert re.search(r"two_ends|the_order_s_and_back|units_back_twice", trace[-1])


def test_an_expiry_on_its_page_s_read_ends_a_released_reservation_again(
    results: dict[str, Result],
) -> None:
    trace = results["EXPIRY_NO_CAS"].trace
    page, _ = step_index(trace, r"reconciler \(pass \d\) reads its pages: the reservation HELD")
    moved, _ = step_index(trace, r"(DELETE|genOrder) .* moves it HELD -> ")
    again, _ = step_index(trace, r"reconciler .* moves it (RELEASED|CONSUMED) -> EXPIRED")
    assert page < moved < again
    assert "two_ends" in trace[-1]


def test_a_return_served_whatever_the_flag_s_decision_gives_the_units_back_twice(
    results: dict[str, Result],
) -> None:
    trace = results["RETURN_NO_CAS"].trace
    returns = [i for i, step in enumerate(trace) if re.search(r"returns with token \d", step)]
    assert len(returns) == 2
    step_index(trace, r"asks the return: .*flag RETURNED")
    assert "units_back_twice" in trace[-1]


@pytest.mark.parametrize(
    ("macros", "story"),
    [
        (("WITNESS_PARTIAL",), r"restock \d commits .*B waits 1/2"),
        (("WITNESS_QUEUE",), r"restock \d decides: 1 unit arrives, [ABC] gets 1"),
        (("WITNESS_CANCEL_FILLS",), r"cancel of B decides: .*gives back [12], [AC] gets 1"),
        (("WITNESS_STALE_GIVE_UP",), r"cancel of B's write is refused by the fence"),
        (("WITNESS_STALE_REFUSAL",), r"order [ABC]'s write is refused by the fence"),
        (("RESERVATIONS", "WITNESS_STALE"), r"write is refused by the fence"),
        (
            ("RESERVATIONS", "WITNESS_LATE_CONSUME"),
            r"genOrder .* is refused: HELD \(past its time: 1\)",
        ),
        (("RESERVATIONS", "WITNESS_OWN_KEY"), r"genOrder .* finds it consumed by its key"),
        (("LOCATED", "WITNESS_SKIP"), r"restock at S decides: 1 unit arrives, B gets 1 at S"),
    ],
    ids=lambda value: value[-1] if isinstance(value, tuple) else "",
)
def test_intact_the_stories_happen(macros: tuple[str, ...], story: str) -> None:
    """Each probe fails in the intact model, so "no violation" covers a line filled in parts, a
    restock meeting two waiting lines, a cancel's units filling another line, a stale give-up
    of nothing and a stale refusal meeting the fence (the gate every hold passes), a stale
    return meeting the fence, a genOrder refused past its time and a retry finding its own
    order, and a unit at S handed to B past an older line waiting for N's (which may not take
    it): not a world where they never happen."""
    witness = probe(*macros)
    assert witness.errors > 0, f"{macros[-1]}: unreachable"
    step_index(witness.trace, story)


@pytest.mark.parametrize(("action", "path"), sorted(BACKORDER_ACTIONS.items()))
def test_each_action_of_the_backorders_model_names_a_function_that_exists(
    action: str, path: str
) -> None:
    assert callable(resolve(path)), f"{action}: {path} is not a function"


def test_no_action_is_both_mapped_and_pending() -> None:
    assert not set(BACKORDER_ACTIONS) & set(PENDING_BACKORDER_ACTIONS)


def test_a_location_s_limit_refuses_a_second_line_owing_there(results: dict[str, Result]) -> None:
    """Without the location's limit, A and C (each naming N, its limit 1) both owe a unit at N
    while the goods id's limit of 3 still has room."""
    trace = results["NO_LOCATION_LIMIT"].trace
    owing = [i for i, s in enumerate(trace) if re.search(r"order [AC] decides: .*backorders 1", s)]
    assert len(owing) == 2
    assert "over_the_limit_at_n" in trace[-1]


def test_a_line_naming_a_location_handed_units_elsewhere_is_caught(
    results: dict[str, Result],
) -> None:
    trace = results["SERVE_ANYWHERE"].trace
    step_index(trace, r"restock at S decides: 1 unit arrives, [AC] gets 1 at S")
    assert "a_unit_from_elsewhere" in trace[-1]


def test_strict_first_in_first_out_leaves_a_unit_on_hand_while_a_line_that_may_take_it_waits(
    results: dict[str, Result],
) -> None:
    """The oldest line names N; S's unit stays on hand behind it while B, which names none and
    could take it, waits to the end: the rule serves the oldest line THAT MAY TAKE the unit."""
    trace = results["STRICT_FIFO"].trace
    end, _ = step_index(trace, r"^end: on hand \d at N, [1-9] at S")
    assert "B waits" in trace[end]
    assert "units_on_hand_while_a_line_waits" in trace[-1]


def test_newest_first_at_a_location_is_caught_by_fairness_per_location(
    results: dict[str, Result],
) -> None:
    assert "later_filled_first" in results["LOCATED_NEWEST"].trace[-1]
