"""A counterexample of the stateful test replayed as a plain test: the run's own 64-character
goods ids and locations, the edge's calls, and the machine's invariants read after each step
(tests/integration/test_stock_stateful_regressions.py)."""

from __future__ import annotations

import uuid
from typing import Any

from tests.stock_answers import check_decided_once, expect
from tests.stock_draws import identifier
from tests.stock_edge import Answered
from tests.stock_invariants import check_all
from tests.stock_stack import Stack
from tests.stock_world import World, read_world


class Replay:
    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.edge = stack.edge
        self.run = uuid.uuid4().hex[:10]
        self.goods: list[str] = []
        self.answered: dict[str, str] = {}
        self.caps: dict[str, int] = {}
        self.made = 0

    def new_id(self, kind: str, length: int = 64) -> str:
        self.made += 1
        return identifier(self.run, kind, self.made, length)

    def new_goods(self, num: int, limit: int = 0) -> str:
        goods_id = self.new_id("g")
        self.goods.append(goods_id)
        expect(self.edge.seed(goods_id, num), (200,), f"seed {goods_id}")
        expect(self.edge.policy(goods_id, limit), (200,), f"policy {goods_id}")
        self.caps[goods_id] = limit
        return self.checked()

    def checked(self, value: Any = None) -> Any:
        """`value`, once the invariants hold (or `goods[-1]` for none)."""
        world = self.world()
        check_all(world, self.goods, self.stack.max_level, self.caps)
        check_decided_once(self.answered, world)
        return self.goods[-1] if value is None else value

    def world(self, *flags: str) -> World:
        return read_world(self.stack.engine, self.goods, [*self.answered, *flags])

    def location(self, priority: int = 1, active: bool = True) -> str:
        location = self.new_id("L")
        expect(self.edge.make_location(location, priority, active), (201,), location)
        return self.checked(location)

    def deduct(self, lines: list[dict[str, Any]], fill: str = "all", hold: bool = False) -> Any:
        flag = self.new_id("f")
        answer = self.edge.deduct(flag, lines, fill, hold)
        expect(answer, (200, 409), f"deduct {flag} {fill} {lines}")
        self.answered[flag] = answer.body["outcome"]
        return self.checked((flag, answer))

    def step(self, answer: Answered, allowed: tuple[int, ...], what: str) -> Answered:
        expect(answer, allowed, what)
        return self.checked(answer)
