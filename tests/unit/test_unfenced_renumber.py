"""The unfenced baseline's renumbering (stock_service/core/unfenced.py) moves every column that
holds a ledger line's seq: a waiting line's `position` as well as the other rows' `seq`."""

from __future__ import annotations

from stock_service.core.unfenced import renumber


def test_renumbering_moves_a_waiting_lines_position_and_a_hand_overs_seq() -> None:
    waiting = [{"flag": "f", "goods_id": "g", "position": 3, "wanted": 2}]
    fills = [{"flag": "f", "goods_id": "g", "seq": 4, "num": 1}]
    other = [{"flag": "h", "goods_id": "other", "position": 7}]
    renumber({"g": 2}, [], waiting, fills, other)
    assert (waiting[0]["position"], fills[0]["seq"], other[0]["position"]) == (5, 6, 7)
