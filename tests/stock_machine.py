"""The stateful test's machine (Hypothesis's RuleBasedStateMachine): every way stock moves,
driven through the stock service's edge (tests/stock_edge.py) with inputs at their limits
(tests/stock_draws.py), and a stale holder interleaved with a newer one
(tests/stock_stale_holder.py). After every step the invariants (tests/stock_invariants.py)
are read from the database, and each answer was held against what it wrote
(tests/stock_answers.py). Each example has goods ids, locations and flags of its own.

STOCK_STATEFUL_WITHOUT=rule,rule leaves rules out: to look past a defect that is found
first, while its fix is not in yet."""

from __future__ import annotations

import uuid
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from tests.stock_answers import check_deduction, expect, wanted_per_goods
from tests.stock_draws import amount, free_text, identifier, level, seed
from tests.stock_stack import Stack
from tests.stock_stale_holder import fingerprint
from tests.stock_world import DEFAULT, World, read_world


def unless_left_out(name: str) -> Any:
    return precondition(lambda self: name not in self.stack.left_out)


class StockMachine(RuleBasedStateMachine):
    stack: ClassVar[Stack]

    def __init__(self) -> None:
        super().__init__()
        self.run = uuid.uuid4().hex[:10]
        self.goods = [identifier(self.run, "g", i) for i in range(2)]
        self.locations: list[str] = []
        self.answered: dict[str, str] = {}  # flag -> its first answer (its outcome)
        self.holds: list[str] = []
        self.transfers: dict[str, dict[str, Any]] = {}  # id -> its view
        self.caps: dict[str, int] = {}  # goods id -> the highest backorder limit it had
        self.at_caps: dict[str, dict[str, int]] = {}  # goods id -> its locations' limits now
        self.made = 0

    def new_id(self, kind: str) -> str:
        self.made += 1
        return identifier(self.run, kind, self.made)

    def world(self, *flags: str) -> World:
        return read_world(self.stack.engine, self.goods, [*self.answered, *flags])

    def places(self) -> list[str]:
        return [DEFAULT, *self.locations]

    @initialize(data=st.data())
    def begin(self, data: st.DataObject) -> None:
        edge = self.stack.edge
        expect(edge.make_location(DEFAULT, 0, True), (200, 201), "default location reset")
        for goods_id in self.goods:
            num = seed(data, self.stack.max_level, f"seed {goods_id}")
            expect(edge.seed(goods_id, num), (200,), f"seed {goods_id}")
            limit = data.draw(st.sampled_from([0, 3, 10, self.stack.max_level]), label="limit")
            expect(edge.policy(goods_id, limit), (200,), f"policy {goods_id} {limit}")
            self.caps[goods_id] = limit
        for _ in range(data.draw(st.sampled_from([0, 1, 4, 5]), label="locations")):
            self.make_location(data)

    # --- locations -----------------------------------------------------------------------

    @precondition(lambda self: len(self.locations) < 6)
    @unless_left_out("make_location")
    @rule(data=st.data())
    def new_location(self, data: st.DataObject) -> None:
        self.make_location(data)

    def make_location(self, data: st.DataObject) -> None:
        length = data.draw(st.sampled_from([64, 64, 64, 64, 64, 16]), label="id length")
        self.made += 1
        location = identifier(self.run, "L", self.made, length)
        priority = data.draw(st.sampled_from([0, 1, 2, 5, 1_000_000]), label="priority")
        active = data.draw(st.sampled_from([True, True, True, False]), label="active")
        expect(self.stack.edge.make_location(location, priority, active), (201,), location)
        self.locations.append(location)

    @unless_left_out("change_location")
    @rule(data=st.data())
    def change_location(self, data: st.DataObject) -> None:
        location = data.draw(st.sampled_from(self.places()), label="location")
        priority = data.draw(st.sampled_from([0, 1, 3, 1_000_000]), label="priority")
        active = data.draw(st.booleans(), label="active")
        answer = self.stack.edge.make_location(location, priority, active)
        expect(answer, (200, 201), f"location {location} {priority} {active}")

    @unless_left_out("set_at")
    @rule(data=st.data())
    def set_at(self, data: st.DataObject) -> None:
        goods_id = data.draw(st.sampled_from(self.goods), label="goods")
        location = data.draw(st.sampled_from(self.places()), label="location")
        num = level(data, self.stack.max_level, "num")
        self.set_level(goods_id, location, num)

    @unless_left_out("spread")
    @rule(data=st.data())
    def spread(self, data: st.DataObject) -> None:
        """A stocktake: the same few units at every location of the run."""
        goods_id = data.draw(st.sampled_from(self.goods), label="goods")
        num = data.draw(st.integers(1, 5), label="num")
        for location in self.locations:
            self.set_level(goods_id, location, num)

    def set_level(self, goods_id: str, location: str, num: int) -> None:
        shelves = self.world().shelves(goods_id)
        answer = self.stack.edge.set_at(goods_id, location, num)
        expect(answer, (200, 409), f"set {goods_id} at {location} to {num}")
        if answer.status == 409:
            here = shelves.get(location, 0)
            total = sum(shelves.values()) - here + num
            raised = num > here and total > self.stack.max_level
            assert raised, f"set refused at total {total}: {answer}"

    # --- adjustments and policy ----------------------------------------------------------

    @unless_left_out("adjust")
    @rule(data=st.data())
    def adjust(self, data: st.DataObject) -> None:
        goods_id = data.draw(st.sampled_from(self.goods), label="goods")
        location = data.draw(st.sampled_from([None, *self.places()]), label="location")
        shelves = self.world().shelves(goods_id)
        here, total = shelves.get(location or DEFAULT, 0), sum(shelves.values())
        top = self.stack.max_level
        body: dict[str, Any] = {}
        if data.draw(st.booleans(), label="by delta"):
            brim = top - total
            edges = [1, 2, 3, -1, -2, brim, brim + 1, -here, -here - 1]
            delta = data.draw(st.sampled_from(edges), label="delta") or 1
            delta = max(-top, min(delta, top))  # the edge's own bound on a delta (400 past it)
            reason = data.draw(st.sampled_from(["restock", "damaged", "correction"]))
            body.update(delta=delta, reason=reason)
            # The cap bounds what an adjustment raises a level to, never what it lowers.
            justified = here + delta < 0 or (delta > 0 and total + delta > top)
        else:
            here_or_below = st.sampled_from([here, max(here - 1, 0)])
            num = data.draw(here_or_below, label="num") if here > top else level(data, top, "num")
            reason = data.draw(st.sampled_from(["set", "count"]), label="reason")
            body.update(num=num, reason=reason)
            if data.draw(st.booleans(), label="compare-and-swap"):
                body["expected"] = data.draw(st.sampled_from([here, here + 1]), label="expected")
            stale = body.get("expected", here) != here
            justified = stale or (num > here and total - here + num > top)
        if location is not None:
            body["location"] = location
        if data.draw(st.booleans(), label="with reference"):
            reference = data.draw(st.sampled_from(["", "x" * 200]) | free_text, label="ref")
            body["reference"] = reference
        answer = self.stack.edge.adjust(goods_id, body)
        expect(answer, (201, 409), f"adjust {goods_id} {body}")
        if answer.status == 409:
            assert justified, f"adjustment {body} refused at {here} of {total}: {answer}"

    @unless_left_out("policy")
    @rule(data=st.data())
    def policy(self, data: st.DataObject) -> None:
        goods_id = data.draw(st.sampled_from(self.goods), label="goods")
        limit = data.draw(st.sampled_from([0, 1, 2, 3, 5, 10, self.stack.max_level]))
        at = data.draw(
            st.dictionaries(st.sampled_from(self.places()), st.sampled_from([0, 1, 2, 5])),
            label="location limits",
        )
        answer = self.stack.edge.policy(goods_id, limit, at)
        expect(answer, (200,), f"policy {goods_id} {limit} {at}")
        self.caps[goods_id] = max(self.caps.get(goods_id, 0), limit)
        self.at_caps[goods_id] = at

    # --- deductions, holds, returns ------------------------------------------------------

    @unless_left_out("deduct")
    @rule(data=st.data())
    def deduct(self, data: st.DataObject) -> None:
        stack = self.stack
        fill = data.draw(st.sampled_from(["all", "partial", "backorder"]), label="fill")
        hold = fill != "backorder" and data.draw(st.booleans(), label="hold")
        count = data.draw(st.sampled_from([1, 1, 2, 3, stack.max_lines]), label="lines")
        world = self.world()
        where: dict[str, str | None] = {}
        for goods_id in self.goods:
            named = data.draw(st.integers(0, 4), label="named") == 0
            pick = data.draw(st.sampled_from(self.places()), label="at") if named else None
            where[goods_id] = pick
        lines = []
        for _ in range(count):
            goods_id = data.draw(st.sampled_from(self.goods), label="goods")
            there = sum(world.shelves(goods_id).values())
            top = 3 if count > 3 else stack.max_quantity
            num = amount(data, there, top, "num")
            line: dict[str, Any] = {"goodsId": goods_id, "goodsNum": num}
            if where[goods_id] is not None:
                line["location"] = where[goods_id]
            lines.append(line)
        flag = self.new_id("f")
        before = fingerprint(stack.engine, self.goods, [flag])
        answer = stack.edge.deduct(flag, lines, fill, hold)
        too_many = max(wanted_per_goods(lines).values()) > stack.max_quantity
        expect(answer, (422,) if too_many else (200, 409), f"deduct {flag} {fill} {lines}")
        if answer.status == 422:
            after = fingerprint(stack.engine, self.goods, [flag])
            assert after == before, f"{flag}: answered 422, yet wrote"
            return
        world = self.world(flag)
        outcome = check_deduction(answer, flag, lines, fill, world)
        self.answered[flag] = outcome
        for line in (r for r in world.lines if r.flag == flag and r.location is not None):
            cap = self.at_caps.get(line.goods_id, {}).get(line.location)
            owed = sum(
                int(r.wanted) - int(r.filled)
                for r in world.of(world.lines, line.goods_id)
                if r.state == "waiting" and r.location == line.location
            )
            assert cap is None or owed <= cap, f"{flag}: {owed} owed at {line.location}, cap {cap}"
        if hold and outcome == "deducted":
            self.holds.append(flag)

    @precondition(lambda self: self.holds)
    @unless_left_out("pay")
    @rule(data=st.data())
    def pay(self, data: st.DataObject) -> None:
        flag = data.draw(st.sampled_from(self.holds), label="flag")
        decision = self.world(flag).decisions.get(flag)
        unpaid = decision is not None and decision.outcome == "deducted" and bool(decision.held)
        answer = self.stack.edge.pay(flag)
        expect(answer, (200,), f"pay {flag}")
        assert answer.body["released"] == unpaid, f"pay {flag}: {answer}, unpaid {unpaid}"

    @unless_left_out("cancel")
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        known = sorted(self.answered)
        fresh = not known or data.draw(st.integers(0, 5), label="unknown flag") == 0
        flag = self.new_id("f") if fresh else data.draw(st.sampled_from(known), label="flag")
        decision = self.world(flag).decisions.get(flag)
        was = decision.outcome if decision is not None else None
        answer = self.stack.edge.cancel(flag)
        expect(answer, (200,), f"cancel {flag} ({was})")
        gives_back = was in ("deducted", "returned")
        said = "returned" if gives_back else "voided"
        assert answer.body["outcome"] == said, f"cancel {flag} ({was}): {answer}"
        if gives_back:
            self.answered[flag] = "returned"
        elif was is None:
            self.answered[flag] = "voided"
