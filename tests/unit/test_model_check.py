"""Run spin on the protocol's model: intact it has no violation, and each guard removed yields
a counterexample (but the reconciler fence, which the status compare-and-set covers in this
world: expected clean). Needs spin and gcc; missing, this fails (it does not skip)."""

from __future__ import annotations

import re

import pytest

from inventory.model_check import (
    VARIANTS,
    Result,
    Variant,
    check_all,
    check_variant,
    parse_pan,
    readable_trace,
)


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


@pytest.mark.parametrize("world", ["restock", "count"])
def test_the_world_with_an_adjustment_has_no_violation(
    results: dict[str, Result], world: str
) -> None:
    """Stock as a ledger: an admin's restock (or count) under the lock and the fence, interleaved
    with the orders, their refusals and B's return: the ledger balances, the level says what is
    there, and a refusal stays one."""
    intact = results[world]
    assert intact.completed, "the search ran out of memory: nothing is proved"
    assert intact.errors == 0, intact.trace
    # explored, not cut short (3.9 and 6.1 million states; the world without the admin but
    # with the reconcilers, their passes and A a hold, has 8.1 million: the two worlds
    # leave out different parts, so their sizes no longer compare); the adjustment is really
    # interleaved with the orders: test_intact_a_refusal_stays_one_when_a_restock_...
    assert intact.states > 1_000_000


@pytest.mark.parametrize("world", ["passes", "holds", "holds restock"])
def test_the_worlds_of_passes_and_holds_have_no_violation(
    results: dict[str, Result], world: str
) -> None:
    """Three reconciler passes (two deducting again, then the void); a hold paid, cancelled and
    expired, with a restock in the last: every assertion holds at every end state."""
    intact = results[world]
    assert intact.completed, "the search ran out of memory: nothing is proved"
    assert intact.errors == 0, intact.trace
    # explored, not cut short (19.4, 2.8 and 0.76 million states when written)
    assert intact.states > 500_000


def test_the_reconciler_fence_alone_is_covered_by_the_status_cas(
    results: dict[str, Result],
) -> None:
    covered = results["NO_RECONCILER_FENCE"]
    assert covered.completed and covered.errors == 0


def step_index(trace: list[str], pattern: str) -> tuple[int, re.Match[str]]:
    """The first step of the trace that matches, and the match."""
    for index, step in enumerate(trace):
        found = re.search(pattern, step)
        if found:
            return index, found
    raise AssertionError(f"no step matches {pattern!r}:\n" + "\n".join(trace))


def test_an_unrecorded_refusal_lets_a_late_attempt_deduct_after_a_return(
    results: dict[str, Result],
) -> None:
    """The late first attempt after a refusal: A is refused while B holds the stock (the refusal
    deletes A's flag from Redis and writes nothing), B is cancelled and its stock returned, and an
    attempt of A that passed the pre-filter before the refusal then finds no decision and deducts:
    the buyer of A was told FAILED, and A has a flow."""
    found = results["REFUSAL_NOT_RECORDED"]
    assert found.errors > 0, "REFUSAL_NOT_RECORDED: no counterexample"
    trace = found.trace
    late, passed = step_index(trace, r"flag A is live, attempt (\d) goes to the lock")
    refused, refusal = step_index(trace, r"answers attempt (\d) of order A: INSUFFICIENT")
    returned, _ = step_index(trace, r"returns order B's stock with token \d+: stock 2")
    deducted, _ = step_index(trace, r"commits order A with token \d+")
    answered, deduction = step_index(trace, r"answers attempt (\d) of order A: DEDUCTED")
    # the late attempt passed the pre-filter before the refusal, and deducted after the return
    assert late < refused < returned < deducted < answered
    assert passed.group(1) == deduction.group(1) != refusal.group(1)
    assert "order A: the buyer is told FAILED" in trace
    assert "end: stock 1, flows A 1 B 1, returns A 0 B 1" in trace[-2]
    # the assertion broken is I9, "told FAILED: no flow", not the rule the variant removes
    assert found.violation.startswith("assertion violated")
    assert trace[-1].startswith("VIOLATED")
    assert "told[o]!=FAILED" in trace[-1] and "flows[o]==0" in trace[-1]


def test_a_fence_without_the_seq_lets_a_newer_holder_write_over_a_split_batch(
    results: dict[str, Result],
) -> None:
    """Stock as a ledger, found by the restock world: a stale hold writes the row (the restock), a
    newer holder reads it (its fence, the stale token), the stale hold's second part writes it again
    under the same token, and the newer holder's write, matched on the fence alone, lands over that
    second write: a lost update, the ledger unbalanced."""
    found = results["FENCE_WITHOUT_SEQ"]
    assert found.errors > 0, "FENCE_WITHOUT_SEQ: no counterexample"
    trace = found.trace
    _, paused = step_index(trace, r"worker (\d) is paused past its session")
    stale = paused.group(1)
    newer = "1" if stale == "2" else "2"
    first, _ = step_index(trace, rf"worker {stale} writes the adjustment with token 1")
    read, _ = step_index(trace, rf"worker {newer} reads for order \w: stock 3, row fence 1")
    second, _ = step_index(trace, rf"worker {stale} serves attempt \d of order \w as the second")
    landed, _ = step_index(trace, rf"worker {stale} commits order \w with token 1")
    over, _ = step_index(trace, rf"worker {newer} commits order \w with token 2")
    # the newer holder read between the stale hold's two writes, and wrote last
    assert first < read < landed < over and second < landed
    assert found.violation.startswith("assertion violated")
    assert "adjusted" in trace[-1] and "flows[0]" in trace[-1]  # the ledger's balance, I1


def test_an_unfenced_adjustment_writes_over_a_deduction(results: dict[str, Result]) -> None:
    """The adjustment's level written last-writer-wins: it read the level before a stale holder's
    deduction landed, and writes its restock on that read over the deduction."""
    found = results["ADJUST_UNFENCED"]
    assert found.errors > 0, "ADJUST_UNFENCED: no counterexample"
    trace = found.trace
    read, level = step_index(trace, r"reads for the adjustment: stock (\d)")
    sold, after = step_index(trace, r"commits order \w with token \d+: stock (\d)")
    wrote, write = step_index(trace, r"writes the adjustment with token \d+: stock (\d) -> (\d)")
    assert read < sold < wrote
    # written on its read, not on the level the deduction left
    assert write.group(1) == level.group(1) != after.group(1)
    assert "adjusted" in trace[-1] and "flows[0]" in trace[-1]  # the ledger's balance, I1


def test_intact_the_late_attempt_runs_and_finds_the_refusal_recorded() -> None:
    """The same story is reachable in the intact model, and there the late attempt reads the flag
    decided refused with the stock back, and deducts nothing (a probe, WITNESS_LATE_ ATTEMPT,
    asserts that this state is never reached: spin reaching it is the witness). So the intact
    model's "no violation" covers the story of a refusal that stays a refusal, not a world without
    it."""
    probe = Variant("WITNESS_LATE_ATTEMPT", ("WITNESS_LATE_ATTEMPT",), False, "a probe")
    witness = check_variant(probe)
    assert witness.errors > 0, "the late attempt after a refusal and a return is unreachable"
    trace = witness.trace
    refused, _ = step_index(trace, r"records order A refused \(stock 0\)")
    returned, _ = step_index(trace, r"returns order B's stock")
    told, _ = step_index(trace, r"order A: the buyer is told FAILED")
    late, _ = step_index(trace, r"reads for order A: stock 2, row fence \d+, decision REFUSED")
    assert refused < returned < late and told < late
    assert not any("commits order A" in step for step in trace)


def test_a_count_applied_at_a_level_it_did_not_expect_undoes_a_sale(
    results: dict[str, Result],
) -> None:
    """The count read the level and counted the shelf; a deduction lands before its write; applied
    anyway, it sets the level to what was counted before the sale. The ledger balances (its entry's
    delta is against the level under the lock): what breaks is that the level says what is there."""
    found = results["CAS_IGNORES_EXPECTED"]
    assert found.errors > 0, "CAS_IGNORES_EXPECTED: no counterexample"
    trace = found.trace
    counted, count = step_index(trace, r"the admin reads stock (\d), counts (\d)")
    sold, _ = step_index(trace, r"commits order \w with token \d+: stock (\d)")
    wrote, write = step_index(trace, r"writes the adjustment with token \d+: stock (\d) -> (\d)")
    assert counted < sold < wrote
    assert write.group(1) != count.group(1)  # the level moved since the admin read it
    assert write.group(2) == count.group(2)  # and the count was written all the same
    assert "unentered" in trace[-1] and "arrived" in trace[-1]  # not the ledger's balance


def test_intact_a_refusal_stays_one_when_a_restock_brings_the_stock_back() -> None:
    """The story of a refusal that stays a refusal with a restock in place of the return: A refused
    while B holds the stock, a unit restocked, and an attempt of A still to run, which reads the
    refusal recorded with the stock there (a probe, WITNESS_LATE_ATTEMPT_RESTOCK, asserts this state
    is never reached: spin reaching it is the witness) and deducts nothing."""
    probe = Variant(
        "WITNESS_LATE_ATTEMPT_RESTOCK",
        ("RESTOCK", "WITNESS_LATE_ATTEMPT_RESTOCK"),
        False,
        "a probe",
    )
    witness = check_variant(probe)
    assert witness.errors > 0, "the late attempt after a refusal and a restock is unreachable"
    trace = witness.trace
    refused, _ = step_index(trace, r"records order A refused \(stock [01]\)")
    restocked, _ = step_index(trace, r"writes the adjustment with token \d+: stock \d -> \d")
    told, _ = step_index(trace, r"order A: the buyer is told FAILED")
    late, _ = step_index(trace, r"reads for order A: stock [1-9], row fence \d+, decision REFUSED")
    assert refused < late and restocked < late and told < late
    assert not any("returns order B" in step for step in trace)
    assert not any("commits order A" in step for step in trace)


def test_a_reconciler_placing_an_order_again_under_a_new_flag_deducts_it_twice(
    results: dict[str, Result],
) -> None:
    """No sale lost to an unknown outcome: an order left PENDING whose late attempt deducted after
    its buyer gave up; a reconciler that places it again under a new flag, without asking about the
    old one, deducts it a second time. Under its own flag (intact) it asks first, and the decision
    row would stop the second deduction anyway."""
    found = results["RECONCILER_NEW_FLAG"]
    assert found.errors > 0, "RECONCILER_NEW_FLAG: no counterexample"
    trace = found.trace
    told, _ = step_index(trace, r"order A: the buyer is told PENDING")
    late, _ = step_index(trace, r"commits order A with token \d+: stock \d, flows 1")
    again, _ = step_index(trace, r"reconciler \d finds order A PENDING: places it again")
    second, _ = step_index(trace, r"commits order A with token \d+: stock \d, flows 2")
    assert max(told, late) < again < second
    assert "flows[o]<=1" in trace[-1]  # one deduction per order, broken


def test_intact_a_reconciler_deducts_an_undecided_order_again() -> None:
    """The story of an order deducted again by the reconcilers is reachable in the intact model: an
    order left PENDING with its flag undecided, which the reconciler writes again and deducts under
    it (a probe, WITNESS_RECONCILER_DEDUCTS, asserts it never deducts: spin reaching it is the
    witness). So the intact model's "no violation" covers the reconciler's deduction."""
    probe = Variant("WITNESS_RECONCILER_DEDUCTS", ("WITNESS_RECONCILER_DEDUCTS",), False, "a probe")
    witness = check_variant(probe)
    assert witness.errors > 0, "a reconciler's deduction again is unreachable"
    trace = witness.trace
    again, order = step_index(trace, r"reconciler \d finds order (\w) PENDING, undecided: writes")
    told, _ = step_index(trace, rf"order {order.group(1)}: the buyer is told PENDING")
    answered, _ = step_index(
        trace, rf"order {order.group(1)}'s deduction again is answered DEDUCTED"
    )
    assert told < again < answered  # the buyer was told PENDING; the reconciler sold it later


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


def test_the_violation_named_is_the_last_trail_s() -> None:
    """pan -i reports each shorter counterexample it finds; the trail is the last one's."""
    found = Result("X", "", expect_violation=True)
    parse_pan(
        "pan:1: assertion violated (flows[o]<=1) (at depth 200)\npan: wrote x.trail\n"
        "pan:1: assertion violated (num>=0) (at depth 150)\npan: wrote x.trail\n"
        "State-vector 148 byte, depth reached 210, errors: 2\n 9 states, stored\n",
        found,
    )
    assert found.violation == "assertion violated (num>=0)"


def test_the_trace_keeps_the_steps_and_the_assertion() -> None:
    replay = "  STEP worker 1 takes the lock, token 1\nnoise\n" + (
        "spin: text of failed assertion: assert((num>=0))\n"
    )
    assert readable_trace(replay) == [
        "worker 1 takes the lock, token 1",
        "VIOLATED assert((num>=0))",
    ]


def test_a_later_pass_deducting_under_a_new_flag_deducts_twice(
    results: dict[str, Result],
) -> None:
    """A pass gives up waiting on its deduction again (or its reconciler is deposed), which runs on;
    a later pass, still finding the flag undecided, deducts under a new flag; both land: one order,
    two deductions. Under the order's own flag the decision row stops the second."""
    found = results["PASS_NEW_FLAG"]
    assert found.errors > 0, "PASS_NEW_FLAG: no counterexample"
    trace = found.trace
    first, order = step_index(trace, r"reconciler \d finds order (\w) PENDING, undecided: writes")
    name = order.group(1)
    later, _ = step_index(trace, rf"finds order {name} PENDING, undecided: places it again under")
    once, _ = step_index(trace, rf"commits order {name} with token \d+: stock \d, flows 1")
    twice, _ = step_index(trace, rf"commits order {name} with token \d+: stock \d, flows 2")
    assert first < later < twice and once < twice
    assert "flows[o]<=1" in trace[-1]


def test_a_later_pass_past_the_bound_meets_an_earlier_pass_s_late_deduction() -> None:
    """The orders world's second pass, past RECONCILE_VOID_AFTER, voids an order it read undecided;
    the first pass's deduction, still at work, lands before the void, and the void answers deducted:
    the order is settled by the sale, not failed (a probe, WITNESS_SECOND_ PASS, asserts the void
    never meets a deduction: spin reaching it is the witness)."""
    probe = Variant("WITNESS_SECOND_PASS", ("WITNESS_SECOND_PASS",), False, "a probe")
    witness = check_variant(probe)
    assert witness.errors > 0, "a void meeting an earlier pass's deduction is unreachable"
    trace = witness.trace
    again, order = step_index(trace, r"reconciler \d finds order (\w) PENDING, undecided: writes")
    name = order.group(1)
    told, _ = step_index(trace, rf"order {name}: the buyer is told PENDING")
    second, _ = step_index(trace, r"reconciler \d starts pass 1")
    voids, _ = step_index(trace, rf"finds order {name} PENDING, undecided past the bound: voids")
    landed, _ = step_index(trace, rf"commits order {name} with token \d+")
    answered, _ = step_index(trace, rf"void of order {name} is answered DEDUCTED")
    assert told < again < second < voids < landed < answered


def test_an_expiry_without_the_status_cas_takes_back_a_paid_hold(
    results: dict[str, Result],
) -> None:
    """The expiry reads the hold AWAITING on its page; the buyer pays before the deadline and is
    told PAID; the expiry, a plain write past the deadline, moves the paid order to CANCELLING and
    its stock comes back: expire and pay both won."""
    found = results["EXPIRY_NO_STATUS_CAS"]
    assert found.errors > 0, "EXPIRY_NO_STATUS_CAS: no counterexample"
    trace = found.trace
    page, _ = step_index(trace, r"the expiry reads order A AWAITING")
    paid, _ = step_index(trace, r"order A is paid before its deadline: the buyer is told PAID")
    moved, _ = step_index(trace, r"the expiry moves order A to CANCELLING")
    returned, _ = step_index(trace, r"returns order A's stock with token \d+")
    assert page < paid < moved < returned
    assert "told[o]!=PAID" in trace[-1]


def test_a_return_not_once_only_brings_an_expired_hold_s_stock_back_twice(
    results: dict[str, Result],
) -> None:
    """Two returns of one hold at work (its buyer's cancel and the expiry's, or the expiry asking
    again); served whatever the flag's decision under the lock, the second reads it returned and
    returns again: a unit sold once comes back twice."""
    found = results["RETURN_NOT_ONCE"]
    assert found.errors > 0, "RETURN_NOT_ONCE: no counterexample"
    trace = found.trace
    asked = [i for i, step in enumerate(trace) if re.search(r"order A.*(asks|asked)", step)]
    assert len(asked) >= 2, trace  # two returns of A's flag asked
    first, _ = step_index(trace, r"returns order A's stock with token \d+")
    read, _ = step_index(
        trace, r"reads for the return of order A: stock \d, row fence \d+, decision RETURNED"
    )
    again = max(i for i, step in enumerate(trace) if "returns order A's stock" in step)
    assert first < read < again
    assert "returns[o]<=flows[o]" in trace[-1]


def test_intact_a_cancel_and_an_expiry_return_a_hold_s_stock_once() -> None:
    """The holds world reaches a hold whose buyer's cancel and whose expiry both ask its stock back,
    each answered RETURNED, the stock back once (a probe, WITNESS_EXPIRY, asserts this end is never
    reached: spin reaching it is the witness)."""
    probe = Variant("WITNESS_EXPIRY", ("HOLDS", "WITNESS_EXPIRY"), False, "a probe")
    witness = check_variant(probe)
    assert witness.errors > 0, "a hold cancelled and expired at once is unreachable"
    trace = witness.trace
    step_index(trace, r"the expiry (moves order A from AWAITING|finds order A CANCELLING)")
    step_index(trace, r"order A( is CANCELLING|'s cancel finds it CANCELLING)")
    assert sum("returns order A's stock" in step for step in trace) == 1
    assert "returns A 1" in trace[-2]


def test_intact_an_expired_hold_s_return_meets_a_restock() -> None:
    """The holds world with a restock reaches the expired hold's return landing on a level the
    restock moved, each under the lock and the fence (a probe, WITNESS_EXPIRY_RESTOCK)."""
    probe = Variant(
        "WITNESS_EXPIRY_RESTOCK",
        ("HOLDS", "RESTOCK", "WITNESS_EXPIRY_RESTOCK"),
        False,
        "a probe",
    )
    witness = check_variant(probe)
    assert witness.errors > 0, "an expiry's return after a restock is unreachable"
    trace = witness.trace
    expired, _ = step_index(trace, r"the expiry moves order A from AWAITING to CANCELLING")
    restocked, _ = step_index(trace, r"writes the adjustment with token \d+: stock \d -> \d")
    returned, _ = step_index(trace, r"returns order A's stock with token \d+")
    assert expired < returned and restocked < returned


def test_a_large_transition_count_is_read_whole() -> None:
    """pan writes a count past 10^8 in exponent form."""
    found = Result("X", "", expect_violation=False)
    parse_pan(
        "State-vector 204 byte, depth reached 9, errors: 0\n 73185640 states, stored\n"
        "1.6583425e+08 transitions (= stored+matched)\n",
        found,
    )
    assert found.transitions == 165_834_250
