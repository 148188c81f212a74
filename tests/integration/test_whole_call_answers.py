"""An answer about a whole batched reduceStock call is no answer about its orders: a 4xx of the
call sends each order again alone, and a refusal after an attempt whose answer was lost (it
may have deducted) never removes an order. The stock service's answers are bent by a transport
between the two apps. Real ZooKeeper, Redis and each SQL database.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from shared.config.settings import Settings
from tests.conftest import unique
from tests.helpers import Services, running_services

BUYERS = 12


class Batched(httpx.BaseTransport):
    """Hands each batched reduceStock call (the n-th, from 1) to `bend`, which answers it;
    passes everything else on."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.bend: Callable[[int, httpx.Request], httpx.Response] | None = None
        self.calls = 0
        self.lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path != "/reduceStock" or self.bend is None:
            return self.inner.handle_request(request)
        with self.lock:
            self.calls += 1
            n = self.calls
        return self.bend(n, request)


def buy_at_once(s: Services, goods: str) -> list[Any]:
    start = threading.Barrier(BUYERS)

    def buy(_: int) -> Any:
        start.wait()
        body = {"userId": unique("u"), "items": [{"goodsId": goods, "num": 1}]}
        return s.order_app.test_client().post("/genOrder", json=body)

    with ThreadPoolExecutor(BUYERS) as pool:
        return list(pool.map(buy, range(BUYERS)))


def bent(s: Services) -> Batched:
    transport = s.order_app.extensions["orders"].stock.http._transport
    assert isinstance(transport, Batched)
    return transport


def test_a_stock_service_that_refuses_every_batch_413_still_confirms_each_order(
    settings: Settings,
) -> None:
    """As a stock service configured with a lower MAX_BODY_BYTES than ORDER_BATCH_BYTES
    assumes: each order of a refused batch is sent again alone, and answered as alone."""
    with running_services(settings, wrap_transport=Batched) as s:
        goods = unique()
        s.seed(goods, 100)
        too_large = httpx.Response(413, json={"error": "request body too large"})
        bent(s).bend = lambda _n, _request: too_large
        answers = buy_at_once(s, goods)
        codes = Counter((a.status_code, a.json.get("status")) for a in answers)
        assert codes == {(200, "CONFIRMED"): BUYERS}, codes
        assert bent(s).calls > 0, "no batch was formed: nothing was tested"
        assert s.level(goods) == 100 - BUYERS


def test_a_batch_whose_answer_was_lost_then_refused_is_confirmed_never_removed(
    settings: Settings,
) -> None:
    """The first batched call deducts, but its answer is lost (a 503 in its place); its retry
    is refused whole (413). The 413 says nothing of the first attempt: every order is
    confirmed from its flows, none removed with its units sold."""
    with running_services(settings, wrap_transport=Batched) as s:
        goods = unique()
        s.seed(goods, 100)
        transport = bent(s)

        def lose_then_refuse(n: int, request: httpx.Request) -> httpx.Response:
            if n == 1:
                transport.inner.handle_request(request).read()  # deducted, answer lost
                return httpx.Response(503, json={"error": "lock wait timed out"})
            return httpx.Response(413, json={"error": "request body too large"})

        transport.bend = lose_then_refuse
        answers = buy_at_once(s, goods)
        assert transport.calls >= 2, "no batch was retried: nothing was tested"
        codes = Counter((a.status_code, a.json.get("status")) for a in answers)
        assert codes == {(200, "CONFIRMED"): BUYERS}, codes
        assert s.level(goods) == 100 - BUYERS
        for answer in answers:
            assert len(s.flows(flag=answer.json["orderId"])) == 1
