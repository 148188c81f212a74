"""The cap (MAX_STOCK_LEVEL) in the plan, as pure logic: it bounds what an adjustment may raise
a goods id's total level to, never what a return leaves; a level past it still takes every
adjustment that lowers or keeps it, a compare-and-swap naming it included, and refuses each
that raises it (stock_service/core/plan.py's _adjust)."""

from __future__ import annotations

from stock_service.core.plan import Adjustment, Kind, Outcome, Request, plan

CAP = 10


def change(name: str, adjustment: Adjustment) -> Request:
    return Request(name, {adjustment.goods_id: 0}, Kind.ADJUST, adjust=adjustment)


def test_a_return_past_the_cap_is_taken_and_the_level_still_goes_down() -> None:
    requests = [
        Request("sold", {"g": 4}, Kind.RETURN),  # 9 + 4: past the cap, taken
        change("restock", Adjustment("g", "restock", delta=1)),
        change("loss", Adjustment("g", "damaged", delta=-1)),
        change("count", Adjustment("g", "count", num=11, expected=12)),
        change("zero", Adjustment("g", "correction", delta=0)),
        change("raise", Adjustment("g", "count", num=12, expected=11)),
        change("down", Adjustment("g", "set", num=7)),
        change("fits", Adjustment("g", "restock", delta=3)),
        change("past", Adjustment("g", "restock", delta=1)),
    ]
    result = plan(requests, {"g": 9}, {"sold": "deducted"}, max_level=CAP)
    assert [(d.outcome, d.level) for d in result.decisions] == [
        (Outcome.RETURNED, None),
        (Outcome.ABOVE_MAX, 13),
        (Outcome.ADJUSTED, 12),
        (Outcome.ADJUSTED, 11),
        (Outcome.ADJUSTED, 11),
        (Outcome.ABOVE_MAX, 11),
        (Outcome.ADJUSTED, 7),
        (Outcome.ADJUSTED, 10),
        (Outcome.ABOVE_MAX, 10),
    ]
    assert result.levels == {"g": 10}


def test_a_location_past_the_cap_in_total_takes_a_lower_set_and_refuses_a_higher_one() -> None:
    named = {"g": {"north": 8}}
    lower = change("lower", Adjustment("g", "set", num=5, location="north"))
    higher = change("higher", Adjustment("g", "set", num=7, location="north"))
    result = plan([lower, higher], {"g": 12}, {}, max_level=CAP, named=named)
    assert [d.outcome for d in result.decisions] == [Outcome.ADJUSTED, Outcome.ABOVE_MAX]
    assert result.levels == {"g": 9}
