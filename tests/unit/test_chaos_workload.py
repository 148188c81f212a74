"""The chaos workload's orders: small ones beside a few big ones (a hundred lines of 64-
character goods ids), whose batches are larger than the stock service takes in one body unless
the order service cuts them (order_service/placing/batch_call.py)."""

from __future__ import annotations

import random
import re
from collections import Counter

from inventory.chaos.after_sale import order_body
from inventory.chaos.workload import BIG_ID_LENGTH, BIG_LINES, Workload, make_goods
from order_service.placing.batch_call import body, cut, entry
from shared.config.settings import Settings
from shared.web.schemas import IDENTIFIER_PATTERN


def test_big_goods_are_long_valid_ids_of_the_run_and_seeded_with_the_rest() -> None:
    goods = make_goods("cz1abcde-")
    assert len(goods.big) == max(BIG_LINES)
    for goods_id in goods.big:
        assert len(goods_id) == BIG_ID_LENGTH and goods_id.startswith("cz1abcde-")
        assert re.fullmatch(IDENTIFIER_PATTERN, goods_id)
    assert goods.big.items() <= goods.levels.items()  # seeded and checked as the others are


def test_orders_are_mostly_small_with_a_few_big_ones_beside_them() -> None:
    load = Workload("127.0.0.1", 1, make_goods("cz1abcde-"))
    rng = random.Random(3)
    orders = [load._order(rng) for _ in range(2000)]
    sizes = Counter("big" if len(o) > 3 else "small" for o in orders)
    assert 0.02 < sizes["big"] / len(orders) < 0.07, sizes
    big = [o for o in orders if len(o) > 3]
    assert {len(o) for o in big} == set(BIG_LINES)
    assert all(set(o) <= set(load.goods.big) and set(o.values()) == {1} for o in big)
    settings = Settings()
    # Each big order fits the order service's own body limit (it is one order)...
    largest = max(big, key=len)
    assert len(order_body("cz1abcde-b1-1", largest, "none")) < settings.max_body_bytes
    # ...but 32 of them in one batched reduceStock would not; cut, each call fits.
    entries = {f"flag{i}": entry(f"flag{i}", largest, False) for i in range(32)}
    assert len(body(entries, list(entries))) > settings.max_body_bytes
    calls = cut(entries, settings.order_batch_bytes)
    assert all(len(body(entries, c)) <= settings.order_batch_bytes for c in calls)
    assert sum(map(len, calls)) == 32
