"""Every fault scenario of `inventory demo <scenario>`, run for real, with its outcome asserted.
Each starts its own stack (FAULT_INJECTION=true) and causes the fault on purpose."""

from __future__ import annotations

import pytest

from inventory import scenarios

pytestmark = pytest.mark.e2e


def test_double_submit_makes_one_order() -> None:
    result = scenarios.double_submit()
    assert result.ok, result
    assert result.facts == {"orders": 1, "level": 4}
    assert result.violations == []


@pytest.mark.parametrize("run", [scenarios.slow_stock, scenarios.lost_response])
def test_a_late_answer_is_retried_with_the_same_flag_and_confirmed_once(run) -> None:  # type: ignore[no-untyped-def]
    result = run()
    assert result.ok, result
    assert result.facts["attempts_seen_by_redis"] >= 2  # the retry reached the Redis filter
    assert result.violations == []


def test_a_lost_redis_flag_is_caught_by_the_stock_flow_table() -> None:
    result = scenarios.redis_flag_lost()
    assert result.ok, result
    assert result.facts == {"level": 2}
    assert result.violations == []


def test_a_stale_lock_holder_is_refused_by_the_fencing_token() -> None:
    result = scenarios.stale_holder()
    assert result.ok, result
    assert result.facts == {"flows": 1, "level": 0}
    assert result.violations == []


def test_without_fencing_the_stale_holder_oversells() -> None:
    result = scenarios.stale_holder(unfenced=True)
    assert result.ok, result  # ok here means: the oversell was shown
    assert result.facts["flows"] == 2
    assert "initial - final = flows - returns" in result.violations


def test_a_worker_killed_mid_deduction_rolls_back_and_the_retry_is_served() -> None:
    """No sale lost: the dead attempt left Alice's flag, so her retry deducted."""
    result = scenarios.crash_mid_deduction()
    assert result.ok, result
    assert result.facts == {"alice": "CONFIRMED", "level": 3}
    assert result.violations == []


def test_losing_the_zookeeper_leader_pauses_deductions_without_violations() -> None:
    result = scenarios.zk_leader_loss(orders=300, kill_after=1.0)
    assert result.ok, result
    assert result.facts["confirmed"] == 300 and result.facts["failed"] == 0
    assert result.violations == []
    print(f"\nzk-leader-loss: unavailable window {result.facts['window_s']} s")


def test_the_unique_key_lock_frees_a_dead_holders_name_by_expiry_and_fences_a_slow_one() -> None:
    result = scenarios.unique_key_lock()
    assert result.ok, result
    assert result.facts["alice"] == "CONFIRMED"  # her retry deducted once the row expired
    assert 1.0 <= result.facts["stuck_s"] < 6.0  # about the TTL (2 s), not forever
    assert result.facts["flows"] == 1 and result.facts["level"] == 0
    assert result.facts["refused"]  # the stale write was refused by the fence
    assert result.violations == []


def test_without_fencing_the_unique_key_locks_overlapping_holders_oversell() -> None:
    result = scenarios.unique_key_lock(unfenced=True)
    assert result.ok, result  # ok here means: the oversell was shown
    assert result.facts["flows"] == 2
    assert "initial - final = flows - returns" in result.violations


def test_redlock_gives_two_holders_at_once_and_the_fence_refuses_the_stale_one() -> None:
    result = scenarios.redlock()
    assert result.ok, result
    assert result.facts["flows"] == 1 and result.facts["level"] == 0
    assert result.facts["refused"]
    assert result.violations == []


def test_without_fencing_redlocks_two_holders_oversell() -> None:
    result = scenarios.redlock(unfenced=True)
    assert result.ok, result
    assert result.facts["flows"] == 2
    assert "initial - final = flows - returns" in result.violations


def test_one_reconciler_leads_and_standbys_take_over_after_a_kill_a_pause_and_a_resignation() -> (
    None
):
    result = scenarios.standby()
    assert result.ok, result
    assert len(result.facts["acting"]) == 1  # exactly one instance ran passes
    assert 1.0 < result.facts["kill_takeover_s"] < 10.0  # about the 2 s session timeout
    assert result.facts["late_write_refused"] and result.facts["order"] == "CONFIRMED"
    assert result.facts["resign_takeover_ms"] < 1000
    print(f"\nstandby: {result.verdict}")


def test_a_redis_failover_grants_one_lock_twice_but_with_a_higher_token_unless_grants_wait() -> (
    None
):
    result = scenarios.redis_failover()
    assert result.ok, result
    plain, waited = result.facts["plain"], result.facts["wait"]
    assert plain["two_holders"] and plain["token_b"] > plain["token_a"]
    assert waited["token_a"] is None and not waited["two_holders"]  # refused, not granted


def test_a_cancel_returns_stock_once_and_the_three_tcc_hazards_are_met() -> None:
    result = scenarios.cancel()
    assert result.ok, result
    assert result.facts["double"]["returns"] and result.facts["suspension"]["refused"]
    assert result.facts["expiry"]["status"] == "CANCELLED"
    race = result.facts["race"]
    assert race["both"] == 0 and race["paid"] + race["expired"] == 5
    assert result.violations == []


def test_locations_allocate_whole_split_only_when_none_can_fill_and_transfer_once() -> None:
    result = scenarios.locations()
    assert result.ok, result
    whole, split = result.facts["whole"], result.facts["split"]
    # One location could fill the whole order: it came whole from the best of those.
    assert whole["one_for_all"] == ["south"] and whole["locations"] == ["south"]
    assert whole["split"] == [] and all(whole["fits"].values())
    # No location could fill the line: then, and only then, it was split, by priority.
    [phone] = split["lines"]
    assert split["fits"] == {phone: []} and split["split"] == [phone]
    assert split["allocations"] == {phone: {"north": 2, "south": 1}}
    # A partial fill: confirmed with what there was; its flag again after a restock deducts
    # nothing (the unfilled part stays a refusal), and the order still says what it filled.
    partial = result.facts["partial"]
    assert partial["status"] == "CONFIRMED"
    assert partial["filled"][phone] == 1 < partial["lines"][phone]
    assert partial["retry"] == "duplicate" and not partial["retry_moved"]
    assert partial["still_filled"] == partial["filled"]
    # A transfer: out of north into transit, the POST repeated moved nothing, received once
    # for two receives, then a cancel refused.
    moved = result.facts["transfer"]
    assert (moved["sent"], moved["repeat"], moved["same_transfer"]) == (201, 200, True)
    assert moved["in_transit"] == 3 and moved["transit_after"] == 0
    assert (
        moved["after_receive"]
        == moved["after_receive_again"]
        == {
            "default": 0,
            "north": 2,
            "south": 3,
        }
    )
    assert moved["legs"] == {"transfer_out": 1, "transfer_in": 1}
    assert moved["cancel_after"] == 409
    assert {c.invariant for c in result.checks} >= {"I1", "I3", "I9", "L1", "L2", "L3", "L4"}
    assert result.violations == []


def test_backorders_fill_the_oldest_first_and_a_reservation_comes_back_once() -> None:
    result = scenarios.backorders()
    assert result.ok, result
    line, fourth = result.facts["line"], result.facts["fourth"]
    # Three buyers with nothing on hand: each BACKORDERED, in line in the order they came.
    assert line["statuses"] == ["BACKORDERED"] * 3 and line["codes"] == [200] * 3
    assert line["backordered"] == [1, 1, 1] and line["in_line"] == ["ann", "ben", "cat"]
    assert line["owed"] == 3
    # A fourth would pass the limit of 3: refused, nothing owed.
    assert (fourth["code"], fourth["status"], fourth["reason"]) == (
        409,
        "FAILED",
        "insufficient_stock",
    )
    assert not fourth["owed_moved"]
    # A restock of two: the two oldest filled, the third still waiting; nothing left on hand.
    assert [(x["buyer"], x["filled"], x["state"]) for x in result.facts["restock"]["lines"]] == [
        ("ann", 1, "filled"),
        ("ben", 1, "filled"),
        ("cat", 0, "waiting"),
    ]
    assert result.facts["restock"]["after"]["num"] == 0
    assert result.facts["restock"]["after"]["owed"] == 1
    # The reconciler's pass confirms exactly the two filled orders.
    confirmed = result.facts["pass"]
    assert confirmed["confirmed"] == ["ann", "ben"]
    assert confirmed["after"] == {"ann": "CONFIRMED", "ben": "CONFIRMED", "cat": "BACKORDERED"}
    # A reservation left alone: held, still held when read past its expiry, expired by the
    # pass with its units back, and a second pass returns nothing again.
    expired = result.facts["expired"]
    assert expired["made"] == 201 and (expired["held"]["num"], expired["held"]["held"]) == (3, 2)
    assert expired["read_state"] == "held" and expired["late_delete"] == (409, "expired")
    assert expired["expired"] and expired["returned"] and expired["state"] == "expired"
    assert expired["units_returned"] is True
    assert (expired["back"]["num"], expired["back"]["held"]) == (5, 0)
    assert not expired["again"] and expired["after_again"] == expired["back"]
    # A reservation consumed by genOrder: the order of its id, one flow, on hand moved once.
    consumed = result.facts["consumed"]
    assert (consumed["status"], consumed["same_id"], consumed["flows"]) == ("CONFIRMED", True, 1)
    assert consumed["held"]["num"] == consumed["after"]["num"] == 4
    assert consumed["after"]["held"] == 0 and consumed["state"] == "consumed"
    assert {c.invariant for c in result.checks} >= {"I1", "I3", "I8", "I9", "L1", "L2", "L4"}
    # Every violation, if any, is one the hand-overs explain exactly (the checks do not count
    # backorder_fill yet); none other.
    assert result.facts["violated"] == []
