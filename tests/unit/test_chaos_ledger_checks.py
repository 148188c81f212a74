"""The chaos run's ledger checks (inventory/chaos/ledger_checks.py) on hand-made histories: HA,
an adjustment's answer against the ledger, catches each way an answer can be contradicted, and
passes what may happen (an unknown outcome that was made, or not)."""

from __future__ import annotations

from inventory.chaos.ledger_checks import Entry, adjustments_hold
from inventory.chaos.restocks import Adjust


def adjust(ref: str, status: int, delta: int | None = 5, seq: int | None = 7) -> Adjust:
    made = status == 201
    return Adjust(
        ref,
        "g1",
        "restock",
        {"delta": 5, "reason": "restock", "reference": ref},
        invoke=1.0,
        complete=1.1,
        status=status,
        delta=delta if made else None,
        seq=seq if made else None,
    )


def test_answers_the_ledger_agrees_with_are_valid() -> None:
    history = [adjust("a1", 201), adjust("a2", 409), adjust("a3", 0), adjust("a4", 503)]
    ledger = [Entry("a1", "g1", 7, 5), Entry("a3", "g1", 8, 5)]  # a3 was made, unanswered
    verdict = adjustments_hold(history, ledger)
    assert verdict.verdict == "valid", verdict
    assert "1 made, 1 refused, 2 without an answer" in verdict.detail


def test_a_made_adjustment_missing_from_the_ledger_is_caught() -> None:
    verdict = adjustments_hold([adjust("a1", 201)], [])
    assert verdict.verdict == "violated"
    assert verdict.counterexamples == ["a1: answered 201, 0 ledger entries"]


def test_a_refused_adjustment_that_wrote_an_entry_is_caught() -> None:
    verdict = adjustments_hold([adjust("a1", 409)], [Entry("a1", "g1", 3, 5)])
    assert verdict.verdict == "violated"
    assert verdict.counterexamples == ["a1: answered 409, yet 1 entries"]


def test_an_entry_unlike_its_answer_is_caught() -> None:
    verdict = adjustments_hold([adjust("a1", 201, delta=5, seq=7)], [Entry("a1", "g1", 9, 5)])
    assert verdict.verdict == "violated"
    assert "told g1 seq 7 delta 5" in verdict.counterexamples[0]
    answered = adjust("a2", 201, delta=5, seq=7)
    answered.level = 12  # the level after it was told
    moved = adjustments_hold([answered], [Entry("a2", "g1", 7, 5, level_after=11)])
    assert moved.verdict == "violated" and "level 12" in moved.counterexamples[0]


def test_an_unanswered_adjustment_made_twice_is_caught() -> None:
    ledger = [Entry("a1", "g1", 3, 5), Entry("a1", "g1", 4, 5)]
    verdict = adjustments_hold([adjust("a1", 0)], ledger)
    assert verdict.verdict == "violated"
    assert verdict.counterexamples == ["a1: no answer, 2 ledger entries"]


def test_an_entry_the_operator_never_sent_is_caught() -> None:
    verdict = adjustments_hold([], [Entry("a9", "g1", 3, 5)])
    assert verdict.verdict == "violated"
    assert verdict.counterexamples == ["a9: 1 entries the operator never sent"]
