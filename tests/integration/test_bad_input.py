"""Every endpoint refuses bad input with a 4xx and a JSON error, and writes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import redis as redis_lib
import sqlalchemy as sa

from order_service.storage.tables import order_details, orders
from stock_service.storage.tables import stock, stock_flow
from tests.conftest import ADMIN, unique
from tests.helpers import Services, running_services

GOODS = "bad-input-goods"
HUGE = "x" * (70 * 1024)


@pytest.fixture(scope="module")
def services(database_url: str, zk_server: Any, redis_server: Any) -> Iterator[Services]:
    from tests.conftest import make_settings

    with running_services(make_settings(database_url, zk_server, redis_server)) as s:
        s.seed(GOODS, 10)
        yield s


def row_counts(s: Services) -> dict[str, Any]:
    with s.engine.connect() as conn:
        counts: dict[str, Any] = {
            t.name: conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one()
            for t in (orders, order_details, stock, stock_flow)
        }
        counts["levels"] = sorted(conn.execute(sa.select(stock.c.goods_id, stock.c.num)).all())
    return counts


def body_of(value: Any) -> bytes:
    return value if isinstance(value, bytes) else json.dumps(value).encode()


ORDER_BODIES = {
    "malformed json": b'{"userId": "u1", "goodsIds": [',
    "empty body": b"",
    "not an object": ["g1"],
    "missing userId": {"goodsIds": [GOODS]},
    "userId not a string": {"userId": 7, "goodsIds": [GOODS]},
    "userId with a slash": {"userId": "a/b", "goodsIds": [GOODS]},
    "neither goodsIds nor items": {"userId": "u1"},
    "both goodsIds and items": {
        "userId": "u1",
        "goodsIds": [GOODS],
        "items": [{"goodsId": GOODS, "num": 1}],
    },
    "empty goodsIds": {"userId": "u1", "goodsIds": []},
    "goodsIds not a list": {"userId": "u1", "goodsIds": GOODS},
    "goods id not a string": {"userId": "u1", "goodsIds": [12]},
    "goods id too long": {"userId": "u1", "goodsIds": ["g" * 65]},
    "zero quantity": {"userId": "u1", "items": [{"goodsId": GOODS, "num": 0}]},
    "negative quantity": {"userId": "u1", "items": [{"goodsId": GOODS, "num": -3}]},
    "absurd quantity": {"userId": "u1", "items": [{"goodsId": GOODS, "num": 10**12}]},
    "quantity as string": {"userId": "u1", "items": [{"goodsId": GOODS, "num": "2"}]},
    "quantity as bool": {"userId": "u1", "items": [{"goodsId": GOODS, "num": True}]},
    "quantity as float": {"userId": "u1", "items": [{"goodsId": GOODS, "num": 1.5}]},
    "missing quantity": {"userId": "u1", "items": [{"goodsId": GOODS}]},
    "item not an object": {"userId": "u1", "items": [GOODS]},
    "too many lines": {"userId": "u1", "goodsIds": [f"g{i}" for i in range(101)]},
    "repeated lines over the limit": {
        "userId": "u1",
        "items": [{"goodsId": GOODS, "num": 6000}] * 2,
    },
    "oversized body": {"userId": "u1", "goodsIds": [GOODS], "pad": HUGE},
}


@pytest.mark.parametrize("case", list(ORDER_BODIES))
def test_gen_order_refuses_bad_input_and_writes_nothing(services: Services, case: str) -> None:
    before = row_counts(services)
    response = services.order.post(
        "/genOrder", data=body_of(ORDER_BODIES[case]), content_type="application/json"
    )
    assert 400 <= response.status_code < 500
    assert isinstance(response.json["error"], str) and response.json["error"]
    assert row_counts(services) == before


def test_gen_order_with_unknown_goods_writes_nothing(services: Services) -> None:
    before = row_counts(services)
    response = services.order.post("/genOrder", json={"userId": "u1", "goodsIds": ["nope-x"]})
    assert response.status_code == 422
    assert row_counts(services) == before


@pytest.mark.parametrize("key", ["", "k" * 129, "tab\there"])
def test_gen_order_refuses_a_bad_idempotency_key(services: Services, key: str) -> None:
    before = row_counts(services)
    response = services.order.post(
        "/genOrder", json={"userId": "u1", "goodsIds": [GOODS]}, headers={"Idempotency-Key": key}
    )
    assert response.status_code == 400
    assert row_counts(services) == before


STOCK_BODIES = {
    "malformed json": b"[{",
    "empty body": b"",
    "object instead of list": {"goodsId": GOODS, "goodsNum": 1},
    "empty list": [],
    "line not an object": [GOODS],
    "zero": [{"goodsId": GOODS, "goodsNum": 0}],
    "negative": [{"goodsId": GOODS, "goodsNum": -1}],
    "absurd": [{"goodsId": GOODS, "goodsNum": 10**15}],
    "string quantity": [{"goodsId": GOODS, "goodsNum": "1"}],
    "missing goodsId": [{"goodsNum": 1}],
    "unknown goods": [{"goodsId": "nope-y", "goodsNum": 1}],
    "oversized body": [{"goodsId": GOODS, "goodsNum": 1, "pad": HUGE}],
}


@pytest.mark.parametrize("case", list(STOCK_BODIES))
def test_reduce_stock_refuses_bad_input_writes_nothing_and_keeps_the_flag(
    services: Services, case: str
) -> None:
    flag = unique("flag")
    flags = redis_lib.Redis.from_url(services.settings.redis_url)
    flags.set(flag, "orderId", ex=60)
    before = row_counts(services)
    response = services.stock.put(
        f"/reduceStock/{flag}", data=body_of(STOCK_BODIES[case]), content_type="application/json"
    )
    assert 400 <= response.status_code < 500
    assert response.json["error"]
    assert row_counts(services) == before
    assert flags.exists(flag) == 1  # a refused request does not use up the operation


def test_reduce_stock_refuses_a_bad_flag(services: Services) -> None:
    response = services.stock.put(
        "/reduceStock/bad%20flag", json=[{"goodsId": GOODS, "goodsNum": 1}]
    )
    assert response.status_code == 400
    assert "flag" in response.json["error"]


@pytest.mark.parametrize("body", [b"{", [5], {"num": -1}, {"num": "5"}, {"num": 10**12}, {}])
def test_put_stock_refuses_bad_levels(services: Services, body: Any) -> None:
    before = row_counts(services)
    response = services.stock.put(
        f"/stock/{GOODS}", data=body_of(body), content_type="application/json", headers=ADMIN
    )
    assert response.status_code == 400
    assert row_counts(services) == before


@pytest.mark.parametrize("path", ["/stock/a%20b", "/stockFlow/a%20b", "/orders/a%20b"])
def test_lookups_refuse_bad_identifiers(services: Services, path: str) -> None:
    client = services.order if path.startswith("/orders") else services.stock
    response = client.get(path)
    assert response.status_code == 400
    assert response.json["error"]


def test_unknown_routes_and_methods_answer_json(services: Services) -> None:
    assert services.order.get("/nowhere").status_code == 404
    assert services.order.get("/nowhere").json["error"]
    assert services.stock.delete(f"/stock/{GOODS}").status_code == 405
    assert services.stock.delete(f"/stock/{GOODS}").json["error"]
