"""The checks of backorders and reservations on hand-made data: B1 the cap at every entry of the
ledger, B2 the fill order, R1 one end per reservation with its units conserved, RA the
reserver's answers; and the existing checks with backorders (I1 and L4 count the hand-overs,
I3 and H1 know BACKORDERED, I8 takes a backordered flag's returns as what it took and was
handed, I10 takes the backorder entries as ledger entries). Each violation planted is caught."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from inventory.chaos.backorder_checks import answers_hold
from inventory.chaos.history import OK, Op, classify
from inventory.chaos.history_checks import answered_ok_is_confirmed
from inventory.chaos.reservations import Step
from inventory.check import Snapshot, check_events
from inventory.check.backorders import (
    Backorders,
    Handed,
    Waited,
    check_cap,
    check_fill_order,
)
from inventory.check.events import OutboxRow
from inventory.check.invariants import (
    check_levels_match_flows,
    check_orders_match_flows,
    check_returns,
)
from inventory.check.reservations import Reservation, check_reservations

T0 = datetime(2026, 11, 28, 12)


def at(s: float) -> datetime:
    return T0 + timedelta(seconds=s)


def line(flag: str, position: int, wanted: int, state: str = "waiting", **kw: Any) -> Waited:
    return Waited(
        flag,
        position,
        wanted,
        state,
        kw.get("made", at(position)),
        kw.get("moved", at(position)),
        kw.get("gave_up"),
        kw.get("after"),
    )


def fill(flag: str, seq: int, num: int) -> Handed:
    return Handed(flag, seq, num, at(seq))


def book(lines: list[Waited], fills: list[Handed], limit: int = 3) -> Backorders:
    return Backorders({"g": limit}, {"g": lines}, {"g": fills})


# --- B1: the cap ------------------------------------------------------------------------------


def test_the_cap_holds_when_fills_and_give_ups_make_room() -> None:
    # a owes 2 (seq 2), b 1 (seq 3): 3 owed; a handed 2 (seq 4); c 2 (seq 5): 3 owed;
    # b gives up at its return (seq 6); d 1 (seq 7): 3 owed.
    data = book(
        [
            line("a", 2, 2, "filled"),
            line("b", 3, 1, "cancelled", gave_up=6),
            line("c", 5, 2),
            line("d", 7, 1),
        ],
        [fill("a", 4, 2)],
    )
    result = check_cap(data)
    assert result.ok, result.detail
    assert result.numbers["most_owed"] == 3


def test_owing_past_the_limit_is_caught() -> None:
    data = book([line("a", 2, 2), line("b", 3, 2)], [])
    result = check_cap(data)
    assert not result.ok
    assert result.numbers["over"] == ["g seq 3: owes 4, limit 3"]


def test_a_give_up_of_unknown_place_counts_only_when_it_came_strictly_before() -> None:
    # b gave up with nothing returned (no seq): its line last moved at second 4
    before = book([line("b", 2, 3, "cancelled", moved=at(4)), line("c", 5, 3)], [])
    assert check_cap(before).ok
    same_time = book([line("b", 2, 3, "cancelled", moved=at(5)), line("c", 5, 3)], [])
    assert not check_cap(same_time).ok  # conservatively still owed


def test_a_give_up_that_returned_nothing_is_placed_by_the_seq_it_recorded() -> None:
    # One commit (one timestamp, second 5): b gives up after seq 4, then c owes 3 at seq 5.
    made = at(5)
    same_commit = [line("b", 2, 3, "cancelled", moved=made, after=4), line("c", 5, 3, made=made)]
    assert check_cap(book(same_commit, [])).ok
    # b gave up after seq 5 (c's entry came first): c's entry owed both, past the limit.
    later = [line("b", 2, 3, "cancelled", moved=made, after=5), line("c", 5, 3, made=made)]
    assert check_cap(book(later, [])).numbers["over"] == ["g seq 5: owes 6, limit 3"]
    # B2: a hand-over to c in that commit, after b gave up, is fair; one before it is not.
    fair = book(same_commit, [Handed("c", 6, 1, made)], limit=6)
    assert check_fill_order(fair).ok
    unfair = book(
        [line("b", 2, 3, "cancelled", moved=made, after=6), line("c", 5, 3, made=made)],
        [Handed("c", 6, 1, made)],
        limit=6,
    )
    assert not check_fill_order(unfair).ok


def test_a_line_handed_more_than_it_wanted_is_caught() -> None:
    result = check_cap(book([line("a", 2, 1)], [fill("a", 3, 1), fill("a", 4, 1)]))
    assert not result.ok and "a handed 2, wanted 1" in result.numbers["over"][0]


# --- B2: the fill order -----------------------------------------------------------------------


def test_oldest_first_in_parts_is_fair() -> None:
    data = book(
        [line("a", 2, 2, "filled"), line("b", 3, 1, "filled")],
        [fill("a", 4, 1), fill("a", 5, 1), fill("b", 6, 1)],
    )
    result = check_fill_order(data)
    assert result.ok, result.detail


def test_a_later_line_filled_while_an_earlier_one_waits_is_caught() -> None:
    data = book([line("a", 2, 2), line("b", 3, 1, "filled")], [fill("a", 4, 1), fill("b", 5, 1)])
    result = check_fill_order(data)
    assert not result.ok
    assert result.numbers["unfair"] == ["g seq 5: 1 to b (place 3) while a (place 2) waited for 1"]


def test_an_earlier_line_given_up_before_the_fill_does_not_wait() -> None:
    known = book([line("a", 2, 2, "cancelled", gave_up=4), line("b", 3, 1)], [fill("b", 5, 1)])
    assert check_fill_order(known).ok
    unknown = book([line("a", 2, 2, "cancelled", moved=at(5)), line("b", 3, 1)], [fill("b", 5, 1)])
    assert check_fill_order(unknown).ok  # at or before the hand-over's time: one batch
    later = book([line("a", 2, 2, "cancelled", gave_up=6), line("b", 3, 1)], [fill("b", 5, 1)])
    assert not check_fill_order(later).ok


def test_a_hand_over_to_a_line_that_never_waited_is_caught() -> None:
    result = check_fill_order(book([], [fill("x", 4, 1)]))
    assert not result.ok and "never waited" in result.numbers["unfair"][0]


# --- R1, RA: reservations ---------------------------------------------------------------------


def res(rid: str, state: str, **kw: Any) -> Reservation:
    lines = kw.pop("lines", {"r": 2})
    return Reservation(rid, state, lines, kw.pop("expires_at", at(0)), **kw)


GOOD = [
    res("c", "consumed", order="CONFIRMED", flows={"r": 2}),
    res("l", "released", flows={"r": 2}, returns={"r": 2}, returned_at=at(1)),
    res("e", "expired", flows={"r": 2}, returns={"r": 2}, returned_at=at(5)),
    res("p", "released"),  # released while pending: nothing deducted
    res("f", "failed"),
]


def test_each_end_with_its_units_passes() -> None:
    result = check_reservations(GOOD, at(10))
    assert result.ok, result.numbers
    assert result.numbers["states"] == {"consumed": 1, "released": 2, "expired": 1, "failed": 1}


def test_a_reservation_consumed_and_given_back_is_caught() -> None:
    both = res("c", "consumed", order="CONFIRMED", flows={"r": 2}, returns={"r": 2})
    result = check_reservations([both], at(10))
    assert not result.ok and "consumed, yet returned" in result.numbers["wrong"][0]


def test_units_back_other_than_once_or_an_order_of_a_released_one_are_caught() -> None:
    kept = res("l", "released", flows={"r": 2}, returned_at=at(1))
    ordered = res(
        "e", "expired", flows={"r": 2}, returns={"r": 2}, returned_at=at(1), order="CONFIRMED"
    )
    twice = res("x", "expired", flows={"r": 2}, returns={"r": 4}, returned_at=at(1))
    result = check_reservations([kept, ordered, twice], at(10))
    assert not result.ok and len(result.numbers["wrong"]) == 3


def test_a_consumed_one_without_its_order_or_its_flows_and_a_late_held_one_are_caught() -> None:
    found = [
        res("c", "consumed", flows={"r": 2}),
        res("d", "consumed", order="CONFIRMED", flows={"r": 1}),
        res("h", "held", flows={"r": 2}),
    ]
    result = check_reservations(found, at(120))
    assert not result.ok and len(result.numbers["wrong"]) == 3
    assert check_reservations([res("h", "held", flows={"r": 2})], at(10)).ok


def test_an_answer_the_end_contradicts_is_caught() -> None:
    by_id = {r.id: r for r in GOOD}
    told = [
        Step("c", "consume", 0.0, status=200, state="CONFIRMED", order_id="c"),
        Step("l", "release", 0.0, status=200, state="released"),
        Step("e", "release", 0.0, status=409, state="expired"),
        Step("e", "reserve", 0.0, status=201, state="held"),
        Step("f", "reserve", 0.0, status=409, state="failed"),
    ]
    assert answers_hold(told, by_id).verdict == "valid"
    wrong = [
        Step("l", "consume", 0.0, status=200, state="CONFIRMED", order_id="l"),
        Step("c", "release", 0.0, status=200, state="released"),
        Step("l", "release", 0.0, status=409, state="consumed"),
        Step("f", "reserve", 0.0, status=201, state="held"),
    ]
    verdict = answers_hold(wrong, by_id)
    assert verdict.verdict == "violated" and len(verdict.counterexamples) == 4


def test_one_key_answered_with_two_reservations_is_caught() -> None:
    by_id = {r.id: r for r in GOOD}
    once = [
        Step("e", "reserve", 0.0, status=201, state="held", key="k1"),
        Step("e", "reserve", 0.0, status=201, state="held", key="k1", repeat=True),
        Step(None, "reserve", 0.0, status=0, key="k1", retry=1),  # no answer: no id
        Step("f", "reserve", 0.0, status=409, state="failed", key="k2"),
    ]
    assert answers_hold(once, by_id).verdict == "valid"
    twice = [*once, Step("l", "reserve", 0.0, status=201, state="held", key="k1", repeat=True)]
    verdict = answers_hold(twice, by_id)
    assert verdict.verdict == "violated" and len(verdict.counterexamples) == 1
    assert "key k1" in verdict.counterexamples[0]


# --- the existing checks, with backorders ------------------------------------------------------


def snapshot(**fields: Any) -> Snapshot:
    base: dict[str, Any] = {
        "levels": {},
        "flow_sums": {},
        "duplicate_flows": [],
        "flows_by_flag": {},
        "orders": {},
        "lines": {},
    }
    return Snapshot(**{**base, **fields})


def owing(**fields: Any) -> Snapshot:
    """Seeded 2: o1 took 2 (flow), o2 owed 2 and was handed 1 of a restock of 1 (BACKORDERED),
    o3 owed 1 and was handed 1 (CONFIRMED), o4 took nothing and was handed 1, then cancelled
    (returned 1), o5 refused (FAILED): level 2 - 2 + 3 - 1 - 1 - 1 + 1 = 1."""
    base: dict[str, Any] = {
        "levels": {"g": (1, 2, 1)},
        "flow_sums": {("g", 1): 2},
        "return_sums": {("g", 1): 1},
        "adjustments": {"g": (3, 3)},
        "fill_sums": {"g": 3},
        "flows_by_flag": {"o1": {"g": 2}},
        "fills_by_flag": {"o2": {"g": 1}, "o3": {"g": 1}, "o4": {"g": 1}},
        "returns_by_flag": {"o4": {"g": 1}},
        "return_times": {"o4": {"g": (None, at(9))}},
        "orders": {
            "o1": "CONFIRMED",
            "o2": "BACKORDERED",
            "o3": "CONFIRMED",
            "o4": "CANCELLED",
            "o5": "FAILED",
        },
        "lines": {"o1": {"g": 2}, "o2": {"g": 2}, "o3": {"g": 1}, "o4": {"g": 1}, "o5": {"g": 9}},
        "backorder": {"o1", "o2", "o3", "o4", "o5"},
    }
    return snapshot(**{**base, **fields})


def test_the_invariants_count_hand_overs_and_know_backordered() -> None:
    snap = owing()
    assert check_levels_match_flows(snap, {}).ok, check_levels_match_flows(snap, {}).detail
    assert check_orders_match_flows(snap).ok, check_orders_match_flows(snap).numbers
    assert check_returns(snap, at(10), 60).ok, check_returns(snap, at(10), 60).numbers
    unseen = owing(fill_sums={"g": 2})  # a hand-over the level does not show
    assert not check_levels_match_flows(unseen, {}).ok


def test_a_backorder_order_beyond_its_lines_or_returned_short_is_caught() -> None:
    more = owing(fills_by_flag={"o2": {"g": 3}, "o3": {"g": 1}, "o4": {"g": 1}})
    assert "o2" in check_orders_match_flows(more).numbers["confirmed_without_flows"]
    short = owing(fills_by_flag={"o2": {"g": 1}, "o3": {"g": 1}, "o4": {"g": 2}})
    assert "o4" in check_orders_match_flows(short).numbers["cancelled_not_returned"]
    assert not check_returns(short, at(10), 60).ok
    confirmed_owing = owing(orders={**owing().orders, "o2": "CONFIRMED"})
    assert "o2" in check_orders_match_flows(confirmed_owing).numbers["confirmed_without_flows"]
    failed_handed = owing(fills_by_flag={**owing().fills_by_flag, "o5": {"g": 1}})
    assert "o5" in check_orders_match_flows(failed_handed).numbers["failed_with_flows"]


def test_h1_takes_backordered_as_placed_and_judges_its_units() -> None:
    assert classify(200, {"orderId": "o2", "status": "BACKORDERED"})[0] == OK
    ops = [
        Op(
            "k2",
            0,
            False,
            {"g": 2},
            0.0,
            1.0,
            200,
            "o2",
            "BACKORDERED",
            None,
            OK,
            {"fill": "backorder"},
        ),
        Op(
            "k3",
            0,
            False,
            {"g": 1},
            0.0,
            1.0,
            200,
            "o3",
            "BACKORDERED",
            None,
            OK,
            {"fill": "backorder"},
        ),
    ]
    assert answered_ok_is_confirmed(ops, owing()).verdict == "valid"
    over = owing(fills_by_flag={"o2": {"g": 3}, "o3": {"g": 1}, "o4": {"g": 1}})
    assert answered_ok_is_confirmed(ops, over).counterexamples == ["o2"]


def test_i10_takes_the_backorder_entries_as_ledger_entries() -> None:
    rows = [
        OutboxRow(1, "g", 1, "adjusted", 1, 1),
        OutboxRow(2, "g", 2, "deducted", -1, 0),
        OutboxRow(3, "g", 3, "backordered", 0, 0),
        OutboxRow(4, "g", 4, "adjusted", 2, 2),
        OutboxRow(5, "g", 5, "backorder_filled", -1, 1),
    ]
    stream = [(f"{r.id}-0", r.fields()) for r in rows]
    result = check_events(rows, stream, {"g": (1, 5)})
    assert result.ok, result.detail
