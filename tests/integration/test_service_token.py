"""STOCK_SERVICE_TOKEN: set (as in the cluster), the stock service's own routes answer 401 to a
caller without it and write nothing, and the order service and the reconciler, which send it,
are served; unset (a single machine), the routes are open (every other test)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from shared.config.settings import Settings
from tests.conftest import ADMIN, unique
from tests.helpers import Services, running_services

TOKEN = "test-service-token"


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings.with_(stock_service_token=TOKEN)) as s:
        yield s


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Bearer {TOKEN[:-1]}"}, ADMIN],
)
def test_a_caller_without_the_token_cannot_deduct_void_return_or_read_flows(
    services: Services, headers: dict[str, str]
) -> None:
    goods, flag = unique(), unique("flag")
    assert services.stock.put(f"/stock/{goods}", json={"num": 5}, headers=ADMIN).status_code == 200
    body = [{"goodsId": goods, "goodsNum": 2}]
    for method, path, kwargs in (
        ("put", f"/reduceStock/{flag}", {"json": body}),
        ("put", "/reduceStock", {"json": {"flags": [{"flag": flag, "lines": body}]}}),
        ("put", f"/voidFlag/{flag}", {}),
        ("put", f"/returnStock/{flag}", {}),
        ("get", f"/stockFlow/{flag}", {}),
    ):
        answer = getattr(services.stock, method)(path, headers=headers, **kwargs)
        assert answer.status_code == 401, (path, answer.json)
        assert "STOCK_SERVICE_TOKEN" in answer.json["error"]
        assert answer.headers["WWW-Authenticate"].startswith("Bearer")
    assert services.level(goods) == 5  # nothing deducted, nothing returned
    # Reading a level and the health check stay open: they change nothing and name no order.
    assert services.stock.get(f"/stock/{goods}").status_code == 200
    assert services.stock.get("/healthz").status_code in (200, 503)


def test_the_order_service_sends_it_and_is_served(services: Services) -> None:
    goods = unique()
    assert services.stock.put(f"/stock/{goods}", json={"num": 5}, headers=ADMIN).status_code == 200
    placed = services.order.post(
        "/genOrder", json={"userId": "u", "items": [{"goodsId": goods, "num": 2}]}
    )
    assert placed.status_code == 200, placed.json
    assert placed.json["status"] == "CONFIRMED"
    assert services.level(goods) == 3
    cancelled = services.order.post(f"/orders/{placed.json['orderId']}/cancel")
    assert cancelled.status_code == 200, cancelled.json
    assert services.level(goods) == 5  # the return went through with the token too
