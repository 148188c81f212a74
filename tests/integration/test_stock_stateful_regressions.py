"""Counterexamples the stateful test (tests/integration/test_stock_stateful.py) found, each
replayed as a plain test of its own, on each database."""

from __future__ import annotations

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
