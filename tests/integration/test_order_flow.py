"""POST /genOrder end to end in-process: order service -> httpx -> stock service, real
ZooKeeper, Redis and SQL databases."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from shared.config.settings import Settings
from tests.conftest import unique
from tests.helpers import Services, running_services


@pytest.fixture(params=[32, 1], ids=["combining", "one-at-a-time"])
def services(settings: Settings, request: pytest.FixtureRequest) -> Iterator[Services]:
    """Every test twice: with combining, and with DEDUCT_BATCH_MAX=1 (one hold each)."""
    with running_services(settings.with_(deduct_batch_max=request.param)) as s:
        yield s


def test_an_order_is_confirmed_and_deducted(services: Services) -> None:
    goods, user = unique(), unique("u")
    services.seed(goods, 3)
    response = services.order.post("/genOrder", json={"userId": user, "goodsIds": [goods]})
    assert response.status_code == 200
    assert response.json["result"] == "success" and response.json["status"] == "CONFIRMED"
    order_id = response.json["orderId"]
    assert services.level(goods) == 2
    assert [f["num"] for f in services.flows(flag=order_id)] == [1]
    order = services.order.get(f"/orders/{order_id}").json
    assert order["status"] == "CONFIRMED" and order["items"] == [{"goodsId": goods, "num": 1}]


def test_items_form_with_quantities(services: Services) -> None:
    a, b = unique(), unique()
    services.seed(a, 10)
    services.seed(b, 10)
    response = services.order.post(
        "/genOrder",
        json={"userId": unique("u"), "items": [{"goodsId": a, "num": 3}, {"goodsId": b, "num": 4}]},
    )
    assert response.status_code == 200
    assert (services.level(a), services.level(b)) == (7, 6)


def test_insufficient_stock_fails_the_order_at_once(services: Services) -> None:
    goods, user = unique(), unique("u")
    services.seed(goods, 1)
    response = services.order.post(
        "/genOrder", json={"userId": user, "items": [{"goodsId": goods, "num": 2}]}
    )
    assert response.status_code == 409
    assert response.json["reason"] == "insufficient_stock"
    assert [o["status"] for o in services.orders_of(user)] == ["FAILED"]
    assert services.level(goods) == 1
    # The shortfall is kept with the line, for the checker's no-lost-sale rule.
    [line] = services.details_of(response.json["orderId"])
    assert (line.available, line.seed_version) == (1, 1)


def test_a_double_submit_with_one_idempotency_key_makes_one_order(services: Services) -> None:
    goods, user, key = unique(), unique("u"), unique("key")
    services.seed(goods, 5)
    body = {"userId": user, "goodsIds": [goods]}
    start = threading.Barrier(2)

    def submit(_: int) -> tuple[int, str]:
        client = services.order_app.test_client()
        start.wait()
        response = client.post("/genOrder", json=body, headers={"Idempotency-Key": key})
        return response.status_code, response.json["orderId"]

    with ThreadPoolExecutor(max_workers=2) as pool:
        answers = list(pool.map(submit, range(2)))
    assert [a[0] for a in answers] == [200, 200]
    assert answers[0][1] == answers[1][1]
    assert len(services.orders_of(user)) == 1
    assert services.level(goods) == 4


def test_an_idempotency_key_reused_with_another_body_is_refused(services: Services) -> None:
    goods, user, key = unique(), unique("u"), unique("key")
    services.seed(goods, 5)
    first = services.order.post(
        "/genOrder", json={"userId": user, "goodsIds": [goods]}, headers={"Idempotency-Key": key}
    )
    assert first.status_code == 200
    other = services.order.post(
        "/genOrder",
        json={"userId": user, "items": [{"goodsId": goods, "num": 2}]},
        headers={"Idempotency-Key": key},
    )
    assert other.status_code == 422
    assert len(services.orders_of(user)) == 1
    assert services.level(goods) == 4


def test_unknown_goods_get_a_4xx_and_nothing_is_written(services: Services) -> None:
    known, user = unique(), unique("u")
    services.seed(known, 5)
    missing = unique("missing")
    response = services.order.post("/genOrder", json={"userId": user, "goodsIds": [known, missing]})
    assert response.status_code == 422
    assert missing in response.json["error"]
    assert services.orders_of(user) == []
    assert services.level(known) == 5


class LoseFirstResponse(httpx.BaseTransport):
    """The stock service does its work, but the first PUT's response never arrives."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.lost = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.method == "PUT" and self.lost == 0:
            self.lost += 1
            raise httpx.ReadTimeout("response lost", request=request)
        return response


def test_a_lost_response_is_retried_with_the_same_flag_and_confirmed_once(
    settings: Settings,
) -> None:
    transports: list[LoseFirstResponse] = []

    def wrap(inner: httpx.BaseTransport) -> httpx.BaseTransport:
        transports.append(LoseFirstResponse(inner))
        return transports[0]

    with running_services(settings, wrap_transport=wrap) as s:
        goods, user = unique(), unique("u")
        s.seed(goods, 5)
        response = s.order.post("/genOrder", json={"userId": user, "goodsIds": [goods]})
        assert response.status_code == 200, response.json
        assert transports[0].lost == 1
        assert s.level(goods) == 4
        assert len(s.flows(flag=response.json["orderId"])) == 1


def test_get_order_of_an_unknown_id_is_404(services: Services) -> None:
    assert services.order.get(f"/orders/{unique('o')}").status_code == 404


def test_health_reports_each_dependency(services: Services) -> None:
    body = services.order.get("/healthz").json
    assert body == {
        "status": "ok",
        "checks": {"database": True, "redis": True, "stock_service": True},
    }
    assert services.stock.get("/healthz").json["checks"] == {
        "database": True,
        "redis": True,
        "lock": True,
    }


class Recording(httpx.BaseTransport):
    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.calls: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.calls.append(f"{request.method} {request.url.path.split('/')[1]}")
        return self.inner.handle_request(request)


def test_a_deduction_is_confirmed_from_the_rows_its_answer_carries(settings: Settings) -> None:
    """The happy path costs one call: the `deducted` answer carries the stock-flow rows its
    commit wrote (what GET /stockFlow returns), so nothing is read back."""
    made: list[Recording] = []

    def wrap(inner: httpx.BaseTransport) -> httpx.BaseTransport:
        made.append(Recording(inner))
        return made[0]

    with running_services(settings, wrap_transport=wrap) as s:
        goods = unique()
        s.seed(goods, 5)
        response = s.order.post(
            "/genOrder", json={"userId": unique("u"), "items": [{"goodsId": goods, "num": 2}]}
        )
        assert response.status_code == 200, response.json
        assert made[0].calls == ["PUT reduceStock"]
        rows = s.stock.get(f"/stockFlow/{response.json['orderId']}").json
        assert [(r["goodsId"], r["num"]) for r in rows] == [(goods, 2)]
