"""The unfenced baseline's renumbering (stock_service/core/unfenced.py) moves every column that
holds a ledger line's seq: a waiting line's `position` as well as the other rows' `seq`."""

from __future__ import annotations

from stock_service.core.backorders import Backorders
from stock_service.core.unfenced import renumber, renumber_give_ups


def test_renumbering_moves_a_waiting_lines_position_and_a_hand_overs_seq() -> None:
    waiting = [{"flag": "f", "goods_id": "g", "position": 3, "wanted": 2}]
    fills = [{"flag": "f", "goods_id": "g", "seq": 4, "num": 1}]
    other = [{"flag": "h", "goods_id": "other", "position": 7}]
    renumber({"g": 2}, [], waiting, fills, other)
    assert (waiting[0]["position"], fills[0]["seq"], other[0]["position"]) == (5, 6, 7)


def test_renumbering_moves_where_a_given_up_line_left_the_ledger() -> None:
    lines = Backorders.of({}, {}, {})
    lines.gave_up_after.update({("f", "g"): 4, ("h", "other"): 9})
    renumber_give_ups({"g": 3}, lines)
    assert lines.gave_up_after == {("f", "g"): 7, ("h", "other"): 9}
    renumber_give_ups({"g": 3}, None)  # a plan without backorders: nothing to move
