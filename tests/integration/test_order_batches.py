"""The order side combines, so that an order costs less than one placed at a time: the orders
of one process that arrive together are placed as one batch (one transaction, one Redis
pipeline, one stock call carrying every flag), and each keeps its own outcome and guarantees.
Real ZooKeeper, Redis and each SQL database.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
import redis as redis_lib

from shared.config.settings import Settings
from tests.conftest import unique
from tests.helpers import Services, running_services


class Recording(httpx.BaseTransport):
    """Passes every request on, and counts the flags of each reduceStock call."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.calls: list[int] = []  # flags per reduceStock call
        self.lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/reduceStock":
            import json

            with self.lock:
                self.calls.append(len(json.loads(request.read())["flags"]))
        elif path.startswith("/reduceStock/"):
            with self.lock:
                self.calls.append(1)
        return self.inner.handle_request(request)


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings, wrap_transport=Recording) as s:
        yield s


def place(s: Services, lines: dict[str, int], key: str | None = None, **extra: Any) -> Any:
    items = [{"goodsId": g, "num": n} for g, n in lines.items()]
    headers = {"Idempotency-Key": key} if key else {}
    body = {"userId": unique("u"), "items": items, **extra}
    return s.order_app.test_client().post("/genOrder", json=body, headers=headers)


def recorded(s: Services) -> Recording:
    transport = s.order_app.extensions["orders"].stock.http._transport
    assert isinstance(transport, Recording)
    return transport


def test_forty_buyers_for_twenty_five_units_get_exactly_twenty_five_in_batches(
    services: Services,
) -> None:
    s = services
    goods = unique()
    s.seed(goods, 25)
    start = threading.Barrier(40)

    def buy(_: int) -> Any:
        start.wait()
        return place(s, {goods: 1})

    with ThreadPoolExecutor(40) as pool:
        answers = list(pool.map(buy, range(40)))
    codes = Counter((a.status_code, a.json["status"]) for a in answers)
    assert codes == {(200, "CONFIRMED"): 25, (409, "FAILED"): 15}, codes
    assert s.level(goods) == 0
    for answer in answers:
        flows = s.flows(flag=answer.json["orderId"])
        assert len(flows) == (1 if answer.status_code == 200 else 0)
    calls = recorded(s).calls
    assert sum(calls) == 40, calls  # every order's flag sent once, none retried
    assert max(calls) > 1, f"no batch of more than one order: {calls}"
    print(f"40 orders in {len(calls)} stock calls: {sorted(calls, reverse=True)}")


def test_a_batch_mixes_goods_lines_holds_and_refusals_each_with_its_own_answer(
    services: Services,
) -> None:
    s = services
    a, b = unique(), unique()
    s.seed(a, 3)
    s.seed(b, 1)
    wanted = [{a: 1}, {a: 1, b: 1}, {b: 1}, {a: 2}, {a: 1}] * 2
    start = threading.Barrier(len(wanted))

    def buy(lines: dict[str, int]) -> Any:
        start.wait()
        return place(s, lines, payWithinSeconds=600)

    with ThreadPoolExecutor(len(wanted)) as pool:
        answers = list(pool.map(buy, wanted))
    taken = Counter[str]()
    for lines, answer in zip(wanted, answers, strict=True):
        order_id = answer.json["orderId"]
        flows = {f["goods_id"]: f["num"] for f in s.flows(flag=order_id)}
        if answer.status_code == 200:
            assert answer.json["status"] == "AWAITING_PAYMENT" and answer.json["payBy"]
            assert flows == lines
            taken.update(lines)
        else:
            assert (answer.status_code, answer.json["status"]) == (409, "FAILED"), answer.json
            assert flows == {} and answer.json["shortfalls"]
    assert s.level(a) == 3 - taken[a] >= 0 and s.level(b) == 1 - taken[b] >= 0
    assert taken[b] == 1  # b's one unit was sold once


def test_one_key_submitted_many_times_in_one_batch_places_one_order(services: Services) -> None:
    s = services
    goods = unique()
    s.seed(goods, 10)
    key = unique("key")
    body = {"userId": unique("u"), "items": [{"goodsId": goods, "num": 1}]}
    start = threading.Barrier(12)

    def submit(_: int) -> Any:
        start.wait()
        headers = {"Idempotency-Key": key}
        return s.order_app.test_client().post("/genOrder", json=body, headers=headers)

    with ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(submit, range(12)))
    assert {a.json["orderId"] for a in answers} == {answers[0].json["orderId"]}
    assert {(a.status_code, a.json["status"]) for a in answers} == {(200, "CONFIRMED")}
    assert s.level(goods) == 9


def test_the_batched_route_answers_each_flag_as_the_single_route_would(
    services: Services,
) -> None:
    """Deducted with its rows, a duplicate, a refusal with its shortfall, a voided flag, a flag
    the stock service does not know, goods it does not know: one call, one result each."""
    s = services
    goods = unique()
    s.seed(goods, 2)
    flags = redis_lib.Redis.from_url(s.settings.redis_url)
    fresh, repeat, refused, dead, lost = (unique("f") for _ in range(5))
    for flag in (fresh, repeat, refused, dead):
        flags.set(flag, "orderId", ex=60)
    line = [{"goodsId": goods, "goodsNum": 1}]
    assert s.stock.put(f"/reduceStock/{repeat}", json=line).json["outcome"] == "deducted"
    flags.set(repeat, "orderId", ex=60)  # live again: decided under the lock
    assert s.stock.put(f"/voidFlag/{dead}").json["outcome"] == "voided"
    body = {
        "flags": [
            {"flag": fresh, "lines": line},
            {"flag": repeat, "lines": line},
            {"flag": refused, "lines": [{"goodsId": goods, "goodsNum": 5}]},
            {"flag": dead, "lines": line},
            {"flag": lost, "lines": line},
            {"flag": unique("f"), "lines": [{"goodsId": unique("nowhere"), "goodsNum": 1}]},
        ]
    }
    answer = s.stock.put("/reduceStock", json=body)
    assert answer.status_code == 200, answer.json
    results = answer.json["results"]
    assert [r["outcome"] for r in results] == [
        "deducted",
        "duplicate",
        "insufficient",
        "voided",
        "unknown_flag",
        "unknown_goods",
    ]
    assert results[0]["flows"][0]["num"] == 1 and results[0]["flows"][0]["flag"] == fresh
    assert results[2]["shortfalls"] == [
        {"goodsId": goods, "requested": 5, "available": 0, "seedVersion": 1}
    ]
    assert s.level(goods) == 0
    twice = {"flags": [{"flag": fresh, "lines": line}, {"flag": fresh, "lines": line}]}
    assert s.stock.put("/reduceStock", json=twice).status_code == 422


def test_the_article_s_one_order_at_a_time_is_order_batch_max_one(settings: Settings) -> None:
    with running_services(settings.with_(order_batch_max=1), wrap_transport=Recording) as s:
        goods = unique()
        s.seed(goods, 10)
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda _: place(s, {goods: 1}), range(8)))
        assert all(a.status_code == 200 for a in answers)
        assert recorded(s).calls == [1] * 8
