"""Big orders at once: many buyers, each a hundred lines, long goods ids. The order side
combines them into batched reduceStock calls; a batch of such orders is larger than the stock
service takes in one body (MAX_BODY_BYTES), so the order side cuts the body by bytes as well
as by count (ORDER_BATCH_BYTES), and every buyer gets the answer a lone order would: here, with
stock for all, CONFIRMED. Real ZooKeeper, Redis and each SQL database.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from shared.config.settings import Settings
from tests.conftest import unique
from tests.helpers import Services, running_services

BUYERS = 48
LINES = 100


class Sizes(httpx.BaseTransport):
    """Passes every request on, and keeps each batched reduceStock call's flags and bytes."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.calls: list[tuple[int, int, int]] = []  # (flags, body bytes, status)
        self.lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.url.path == "/reduceStock":
            body = request.read()
            with self.lock:
                self.calls.append((len(json.loads(body)["flags"]), len(body), response.status_code))
        return response


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings, wrap_transport=Sizes) as s:
        yield s


def goods_ids(length: int) -> list[str]:
    """LINES goods ids of exactly `length` characters (the longest the API takes is 64)."""
    return [f"g{i:03d}-{uuid.uuid4().hex * 2}"[:length] for i in range(LINES)]


@pytest.mark.parametrize("id_length", [24, 64])
def test_forty_eight_buyers_of_a_hundred_lines_are_all_confirmed(
    services: Services, id_length: int
) -> None:
    s = services
    goods = goods_ids(id_length)
    for g in goods:
        s.seed(g, 1000)
    items = [{"goodsId": g, "num": 1} for g in goods]
    start = threading.Barrier(BUYERS)

    def buy(_: int) -> Any:
        start.wait()
        body = {"userId": unique("u"), "items": items}
        return s.order_app.test_client().post("/genOrder", json=body)

    began = time.monotonic()
    with ThreadPoolExecutor(BUYERS) as pool:
        answers = list(pool.map(buy, range(BUYERS)))
    took = time.monotonic() - began
    codes = Counter((a.status_code, a.json.get("status"), a.json.get("error")) for a in answers)
    assert codes == {(200, "CONFIRMED", None): BUYERS}, codes
    assert {s.level(g) for g in goods} == {1000 - BUYERS}
    calls = s.order_app.extensions["orders"].stock.http._transport.calls
    cap = s.settings.order_batch_bytes
    assert all(status == 200 for _, _, status in calls), calls
    assert all(size <= cap for _, size, _ in calls), (cap, calls)
    assert max((flags for flags, _, _ in calls), default=1) > 1, f"no batch of orders: {calls}"
    print(f"{BUYERS} orders of {LINES} lines ({id_length}-character ids) in {took:.1f} s: {calls}")


def test_a_body_cap_below_the_stock_service_s_splits_batches_and_keeps_every_answer(
    settings: Settings,
) -> None:
    """A small ORDER_BATCH_BYTES makes many calls of few orders each: none is over it, and the
    answers are what a lone order gets."""
    with running_services(settings.with_(order_batch_bytes=4096), wrap_transport=Sizes) as s:
        goods = goods_ids(64)[:20]
        for g in goods:
            s.seed(g, 100)
        items = [{"goodsId": g, "num": 1} for g in goods]
        start = threading.Barrier(16)

        def buy(_: int) -> Any:
            start.wait()
            return s.order_app.test_client().post(
                "/genOrder", json={"userId": unique("u"), "items": items}
            )

        with ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(buy, range(16)))
        assert {(a.status_code, a.json["status"]) for a in answers} == {(200, "CONFIRMED")}
        assert {s.level(g) for g in goods} == {100 - 16}
        calls = s.order_app.extensions["orders"].stock.http._transport.calls
        assert all(size <= 4096 and status == 200 for _, size, status in calls), calls
