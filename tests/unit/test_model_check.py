"""Run spin on the protocol's model: intact it has no violation, and each guard removed yields
a counterexample (but the reconciler fence, which the status compare-and-set covers in this
world: expected clean). Needs spin and gcc; missing, this fails (it does not skip)."""

from __future__ import annotations

import pytest

from inventory.model_check import VARIANTS, Result, check_all, parse_pan, readable_trace


@pytest.fixture(scope="module")
def results() -> dict[str, Result]:
    return {r.variant: r for r in check_all()}


def test_the_intact_model_has_no_violation(results: dict[str, Result]) -> None:
    intact = results["intact"]
    assert intact.completed, "the search ran out of memory: nothing is proved"
    assert intact.errors == 0, intact.trace
    assert intact.states > 100_000  # the world really is explored, not cut short


@pytest.mark.parametrize("variant", [v.name for v in VARIANTS if v.expect_violation], ids=str)
def test_each_guard_removed_gives_a_counterexample(
    results: dict[str, Result], variant: str
) -> None:
    found = results[variant]
    assert found.errors > 0, f"{variant}: no counterexample"
    assert found.violation.startswith("assertion violated")
    assert any(step.startswith("VIOLATED") for step in found.trace)
    assert len(found.trace) > 3


def test_the_reconciler_fence_alone_is_covered_by_the_status_cas(
    results: dict[str, Result],
) -> None:
    covered = results["NO_RECONCILER_FENCE"]
    assert covered.completed and covered.errors == 0


def test_every_variant_is_as_expected(results: dict[str, Result]) -> None:
    assert [name for name, r in results.items() if not r.ok] == []


def test_a_search_cut_short_by_memory_is_not_a_pass() -> None:
    cut = Result("intact", "", expect_violation=False)
    parse_pan(
        "pan: reached -DMEMLIM bound\nWarning: Search not completed\n"
        "State-vector 140 byte, depth reached 9, errors: 0\n 5 states, stored\n",
        cut,
    )
    assert not cut.completed and not cut.ok


def test_the_trace_keeps_the_steps_and_the_assertion() -> None:
    replay = "  STEP worker 1 takes the lock, token 1\nnoise\n" + (
        "spin: text of failed assertion: assert((num>=0))\n"
    )
    assert readable_trace(replay) == [
        "worker 1 takes the lock, token 1",
        "VIOLATED assert((num>=0))",
    ]
