"""Counterexamples the stateful test (tests/integration/test_stock_stateful.py) found, each
replayed as a plain test of its own, on each database."""

from __future__ import annotations

from stock_service.core.model import Request
from tests.stock_replay import Replay
from tests.stock_stack import Stack, stack
from tests.stock_stale_holder import run_stale, stale_return

__all__ = ["stack"]  # the fixture, found by pytest in this module


def test_a_stale_holder_s_give_up_of_a_line_handed_units_since_is_refused(stack: Stack) -> None:
    r = Replay(stack)
    goods = r.new_goods(0, limit=3)
    flag, answer = r.deduct([{"goodsId": goods, "goodsNum": 3}], fill="backorder")
    assert answer.body["outcome"] == "backordered", answer
    request = stale_return(stack.store, flag)

    def newer_holder() -> None:
        r.step(r.edge.adjust(goods, {"delta": 2, "reason": "restock"}), (201,), "restock 2")

    run = run_stale(stack.engine, stack.store, stack.locks, request, newer_holder, [flag])
    print(run)
    r.checked()
    assert run.overtaken and run.refused and not run.wrote, run


def test_a_location_made_active_hands_its_units_to_the_lines_waiting(stack: Stack) -> None:
    """Found with four 64-character locations, one of them inactive, and the default made
    inactive: a backordered line waits; a stocktake puts a unit at each location (the active
    ones hand theirs over); the inactive one is made active and handed nothing, its unit on
    an active shelf while the line waits for it (the machine's steps that touch neither the
    goods id nor the location left out)."""
    r = Replay(stack)
    goods = r.new_goods(0, limit=stack.max_level)
    places = [r.location(priority=0, active=True) for _ in range(3)]
    asleep = r.location(priority=0, active=False)
    r.step(r.edge.make_location("default", 0, False), (200, 201), "default inactive")
    try:
        _, answer = r.deduct([{"goodsId": goods, "goodsNum": 1022}], fill="backorder")
        assert answer.body["outcome"] == "backordered", answer
        for place in [*places, asleep]:
            r.step(r.edge.set_at(goods, place, 1), (200,), f"a unit at {place}")
        r.step(r.edge.make_location(asleep, 0, True), (200,), "the inactive one made active")
    finally:
        stack.edge.make_location("default", 0, True)


def test_a_line_split_over_six_64_character_locations_is_deducted_and_returned(
    stack: Stack,
) -> None:
    """Found on PostgreSQL (a 500: the joined text of the parts, past a column of 200): six
    64-character locations with a unit each, the default made inactive, a partial deduction
    of 1 + 6 units of one goods id; then (the issue's own check) its cancel puts every unit
    back where it came from."""
    r = Replay(stack)
    goods = r.new_goods(0)
    places = [r.location(priority=0) for _ in range(6)]
    r.step(r.edge.make_location("default", 0, False), (200, 201), "default inactive")
    try:
        for place in places:
            r.step(r.edge.set_at(goods, place, 1), (200,), f"a unit at {place}")
        lines = [{"goodsId": goods, "goodsNum": 1}, {"goodsId": goods, "goodsNum": 6}]
        flag, answer = r.deduct(lines, fill="partial")
        assert answer.body["outcome"] == "deducted", answer
        taken = {a["location"]: a["num"] for a in answer.body["allocations"]}
        assert taken == dict.fromkeys(places, 1), taken
        r.step(r.edge.cancel(flag), (200,), f"cancel {flag}")
        r.answered[flag] = "returned"
        assert r.checked(r.world().shelves(goods)) == {"default": 0, **dict.fromkeys(places, 1)}
    finally:
        stack.edge.make_location("default", 0, True)


def test_a_backordered_line_taking_a_unit_from_four_64_character_locations(
    stack: Stack,
) -> None:
    """Found on MariaDB (a 500, the same column of 200 as on PostgreSQL): four 64-character
    locations with a unit each, a backordered deduction of 366 takes the four and owes the
    rest (the machine's steps on its other goods id left out)."""
    r = Replay(stack)
    goods = r.new_goods(0, limit=stack.max_level)
    places = [r.location(priority=0) for _ in range(4)]
    for place in places:
        r.step(r.edge.set_at(goods, place, 1), (200,), f"a unit at {place}")
    _, answer = r.deduct([{"goodsId": goods, "goodsNum": 366}], fill="backorder")
    assert answer.body["outcome"] == "backordered", answer
    assert answer.body["backordered"] == [{"goodsId": goods, "num": 362}], answer


def test_a_stale_holder_s_refusal_read_before_a_restock_is_refused(stack: Stack) -> None:
    """Found shrunk to this: a goods id at 0; a stale holder reads it for a deduction of 1,
    stalls; a newer holder restocks 1; the stale one commits its refusal (`insufficient`,
    decided for good) although the unit it was refused for was there: a refusal writes no
    level, yet it was read under the same lock."""
    r = Replay(stack)
    goods = r.new_goods(0)
    flag = r.new_id("f")

    def newer_holder() -> None:
        r.step(r.edge.adjust(goods, {"delta": 1, "reason": "restock"}), (201,), "restock 1")

    request = Request(flag, {goods: 1})
    run = run_stale(stack.engine, stack.store, stack.locks, request, newer_holder, [flag])
    r.checked()
    assert run.overtaken and run.refused and not run.wrote, run


def test_a_transfer_reference_differing_only_in_case_is_answered(stack: Stack) -> None:
    """Found on MariaDB (503 "lock lost ... overtaken on every attempt"): a goods id at the
    cap, a 64-character location, a transfer of 1 with reference R, then the same transfer
    with R upper-cased. Whatever the answer (the same transfer, or a new one), not a 503,
    and what moved is what was answered (the machine's policy steps and unused locations
    left out)."""
    r = Replay(stack)
    goods = r.new_goods(stack.max_level)
    there = r.location(priority=0)
    reference = r.new_id("PO")[:40]
    first = r.step(r.edge.send(goods, "default", there, 1, reference), (201,), reference)
    again = r.step(r.edge.send(goods, "default", there, 1, reference.upper()), (200, 201), "R")
    moved = 2 if again.status == 201 else 1
    assert again.status == 201 or again.body["transferId"] == first.body["transferId"], again
    world = r.world()
    in_transit = sum(int(t.units) for t in world.of(world.transfers, goods))
    assert (world.shelves(goods)["default"], in_transit) == (stack.max_level - moved, moved)


def test_a_stale_holder_s_give_up_behind_an_older_line_is_refused(stack: Stack) -> None:
    """Found with a second line waiting (the machine's steps on its other goods id, and the
    returns the newer holders refused, left out): a goods id at 1 owes 9,999 to an older
    line and 10,000 to a newer one, handed nothing; a stale holder reads the newer line's
    cancel and stalls; a newer holder restocks 5 (handed to the older line, oldest first);
    the stale give-up, which writes no level, committed all the same."""
    r = Replay(stack)
    goods = r.new_goods(1, limit=stack.max_level)
    for owes in (9_999, 10_000):
        flag, answer = r.deduct([{"goodsId": goods, "goodsNum": 10_000}], fill="backorder")
        assert answer.body["backordered"] == [{"goodsId": goods, "num": owes}], answer
    request = stale_return(stack.store, flag)

    def newer_holder() -> None:
        r.step(r.edge.adjust(goods, {"delta": 5, "reason": "restock"}), (201,), "restock 5")

    run = run_stale(stack.engine, stack.store, stack.locks, request, newer_holder, [flag])
    r.checked()
    assert run.overtaken and run.refused and not run.wrote, run


def test_a_compare_and_swap_expecting_one_past_the_cap_is_answered_stale(stack: Stack) -> None:
    """Found as the machine printed it: a goods id at MAX_STOCK_LEVEL, a count of the default
    location expecting one more than the cap (a level returns can leave) was a 400, as if no
    level could ever be there; it is a compare-and-swap that is stale (409, nothing changed)."""
    r = Replay(stack)
    goods = r.new_goods(stack.max_level)
    body = {"num": 4930, "reason": "count", "expected": stack.max_level + 1}
    answer = r.step(r.edge.adjust(goods, {**body, "location": "default"}), (409,), "count")
    assert answer.body["num"] == stack.max_level, answer


def test_a_level_a_return_lifted_past_the_cap_takes_a_loss_and_a_count(stack: Stack) -> None:
    """The path behind it (found by the machine's first invariant, that no level may pass the
    cap, before the cap was stated as bounding adjustments alone): at the cap, 2 sold, 2
    restocked, the sale cancelled: the return lifts the level to the cap + 2. Such a level
    takes a loss that leaves it above the cap and a compare-and-swap naming it, and refuses a
    restock (409)."""
    r = Replay(stack)
    top = stack.max_level
    goods = r.new_goods(top)
    flag, _ = r.deduct([{"goodsId": goods, "goodsNum": 2}])
    r.step(r.edge.adjust(goods, {"delta": 2, "reason": "restock"}), (201,), "restock 2")
    r.step(r.edge.cancel(flag), (200,), f"cancel {flag}")
    r.answered[flag] = "returned"
    assert r.world().shelves(goods) == {"default": top + 2}
    r.step(r.edge.adjust(goods, {"delta": 1, "reason": "restock"}), (409,), "restock past")
    r.step(r.edge.adjust(goods, {"delta": -1, "reason": "damaged"}), (201,), "a loss")
    swap = {"num": top - 5, "reason": "count", "expected": top + 1}
    r.step(r.edge.adjust(goods, swap), (201,), "a count naming the level")


def test_the_default_location_made_active_again_hands_its_units_to_lines_waiting(
    stack: Stack,
) -> None:
    """Found on the tree with named locations' activation fixed: the default location made
    inactive, a backordered line waits, 10 units are set at the default (out of reach), and
    the default made active again hands them nothing: they sit on an active shelf while the
    line waits for them."""
    r = Replay(stack)
    goods = r.new_goods(0, limit=10)
    r.step(r.edge.make_location("default", 0, False), (200, 201), "default inactive")
    try:
        _, answer = r.deduct([{"goodsId": goods, "goodsNum": 3}], fill="backorder")
        assert answer.body["outcome"] == "backordered", answer
        r.step(r.edge.adjust(goods, {"num": 10, "reason": "set"}), (201,), "10 at the default")
        r.step(r.edge.make_location("default", 0, True), (200, 201), "default active again")
    finally:
        stack.edge.make_location("default", 0, True)
