"""Every route that takes a JSON body refuses one not sent as application/json: 415, a JSON
error, nothing written. A page on another site can make a browser send text/plain, a form
(urlencoded or multipart) or no Content-Type at all without a CORS preflight; those used to
place real orders because the body was read as JSON whatever it was labelled."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import redis as redis_lib

from tests.conftest import ADMIN, unique
from tests.helpers import Services, running_services
from tests.integration.test_bad_input import row_counts

GOODS = "json-only-goods"
# What a cross-site page can send without a preflight, and a client that sends no type.
NOT_JSON = [
    "text/plain",
    "text/plain; charset=utf-8",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    None,
]


@pytest.fixture(scope="module")
def services(database_url: str, zk_server: Any, redis_server: Any) -> Iterator[Services]:
    from tests.conftest import make_settings

    settings = make_settings(database_url, zk_server, redis_server, fault_injection=True)
    with running_services(settings) as s:
        s.seed(GOODS, 10)
        yield s


def send(services: Services, route: str, content_type: str | None) -> Any:
    """The route's valid body, labelled `content_type` (None: no Content-Type header)."""
    kwargs: dict[str, Any] = {} if content_type is None else {"content_type": content_type}
    if route == "genOrder":
        body = {"userId": unique("u"), "goodsIds": [GOODS]}
        return services.order.post("/genOrder", data=json.dumps(body), **kwargs)
    if route == "reduceStock":
        flag = unique("flag")
        redis_lib.Redis.from_url(services.settings.redis_url).set(flag, "orderId", ex=60)
        body = [{"goodsId": GOODS, "goodsNum": 1}]
        return services.stock.put(f"/reduceStock/{flag}", data=json.dumps(body), **kwargs)
    if route == "stock":
        return services.stock.put(
            f"/stock/{GOODS}", data=json.dumps({"num": 3}), headers=ADMIN, **kwargs
        )
    body = {"value": 0, "times": 1}
    return services.stock.put(
        "/faults/delay_after_commit", data=json.dumps(body), headers=ADMIN, **kwargs
    )


ROUTES = ["genOrder", "reduceStock", "stock", "faults"]


@pytest.mark.parametrize("content_type", NOT_JSON)
@pytest.mark.parametrize("route", ROUTES)
def test_a_body_not_sent_as_json_is_415_and_writes_nothing(
    services: Services, route: str, content_type: str | None
) -> None:
    before = row_counts(services)
    response = send(services, route, content_type)
    assert response.status_code == 415, response.json
    assert "Content-Type: application/json" in response.json["error"]
    assert row_counts(services) == before


@pytest.mark.parametrize("route", ROUTES)
def test_application_json_with_a_charset_is_accepted(services: Services, route: str) -> None:
    response = send(services, route, "application/json; charset=utf-8")
    assert response.status_code == 200, response.json


@pytest.mark.parametrize("which", ["order", "stock"])
def test_the_contract_lists_415_on_every_route_with_a_body(services: Services, which: str) -> None:
    spec = getattr(services, which).get("/openapi.json").json
    with_body = [
        (path, method, operation)
        for path, item in spec["paths"].items()
        for method, operation in item.items()
        if "requestBody" in operation
    ]
    assert with_body
    for path, method, operation in with_body:
        assert "415" in operation["responses"], (method, path)


def placed_order(services: Services) -> str:
    goods = unique("bodyless-goods")
    services.seed(goods, 1)
    response = services.order.post("/genOrder", json={"userId": unique("u"), "goodsIds": [goods]})
    assert response.status_code == 200, response.json
    return str(response.json["orderId"])


BODYLESS = ["/orders/{id}/cancel", "/orders/{id}/pay"]
# What a form on another site posts; each is refused on a route that takes no body.
FORM_TYPES = [t for t in NOT_JSON if t is not None]


@pytest.mark.parametrize("content_type", FORM_TYPES)
@pytest.mark.parametrize("route", BODYLESS)
def test_a_typed_post_to_a_route_with_no_body_is_415_and_changes_nothing(
    services: Services, route: str, content_type: str
) -> None:
    order_id = placed_order(services)
    before = row_counts(services)
    response = services.order.post(route.format(id=order_id), data="a=1", content_type=content_type)
    assert response.status_code == 415, response.json
    assert "takes no body" in response.json["error"]
    assert row_counts(services) == before
    assert services.order.get(f"/orders/{order_id}").json["status"] == "CONFIRMED"


@pytest.mark.parametrize("content_type", [None, "application/json"])
def test_a_cancel_with_no_type_or_json_is_served(
    services: Services, content_type: str | None
) -> None:
    order_id = placed_order(services)
    kwargs: dict[str, Any] = {} if content_type is None else {"content_type": content_type}
    response = services.order.post(f"/orders/{order_id}/cancel", **kwargs)
    assert response.status_code == 200, response.json
    assert response.json["status"] == "CANCELLED"


def test_the_contract_lists_415_on_every_post_with_no_body(services: Services) -> None:
    spec = services.order.get("/openapi.json").json
    posts = [p for p, item in spec["paths"].items() if "post" in item]
    bodyless = [p for p in posts if "requestBody" not in spec["paths"][p]["post"]]
    assert {"/orders/{orderId}/cancel", "/orders/{orderId}/pay", "/cancelOrder"} <= set(bodyless)
    for path in bodyless:
        assert "415" in spec["paths"][path]["post"]["responses"], path
