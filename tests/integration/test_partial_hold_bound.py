"""A request that holds some of its names while it waits for another (one goods id's lock held
by a stalled holder) gives the ones it holds up after `partial_hold` (1 s past the patience):
before, an order of the stalled goods id and another kept that other goods id's lock from all
its buyers for as long as it waited, its caller's whole time (the chaos run's stall check
caught buyers of a second hot goods id answered only after the 4 s call timeout). Real
ZooKeeper, Redis and each SQL database; the stall is a ZooKeeper client of its own on the
stock service's lock path."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import redis as redis_lib

from shared.config.settings import Settings
from tests.conftest import unique
from tests.helpers import Services, running_services
from tests.integration.test_stalled_lock_neighbours import Stall

STALL = 6.0


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings) as s:
        yield s


def deduct(s: Services, lines: dict[str, int]) -> tuple[float, Any]:
    flag = unique("f")
    redis_lib.Redis.from_url(s.settings.redis_url).set(flag, "orderId", ex=60)
    body = [{"goodsId": g, "goodsNum": n} for g, n in lines.items()]
    started = time.monotonic()
    answer = s.stock.put(f"/reduceStock/{flag}", json=body)
    return time.monotonic() - started, answer


def test_an_order_waiting_for_a_stalled_lock_gives_the_other_goods_id_s_lock_up(
    services: Services,
) -> None:
    s = services
    stalled, other = unique("stalled"), unique("other")
    s.seed(stalled, 5)
    s.seed(other, 5)
    stall = Stall(s.settings, stalled, STALL)
    try:
        with ThreadPoolExecutor(2) as pool:
            both = pool.submit(deduct, s, {stalled: 1, other: 1})
            time.sleep(0.5)  # it holds `other` and waits for `stalled`
            took, alone = deduct(s, {other: 1})
            both_took, both_answer = both.result(30)
    finally:
        stall.end()
    assert (alone.status_code, alone.json["outcome"]) == (200, "deducted"), alone.json
    assert took < STALL - 2, f"the other goods id's buyer waited {took:.1f} s behind the stall"
    # The order of both was given up with nothing written, its flag live for a retry.
    assert both_answer.status_code == 503, both_answer.json
    assert both_took < STALL - 2, both_took
    assert s.level(stalled) == 5 and s.level(other) == 4
