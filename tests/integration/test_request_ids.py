"""X-Request-Id: echoed when the caller sends a sane one, made up when it sends none or an
unsafe one, and sent on to the stock service (which echoes what it received)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from shared.config.settings import Settings
from tests.conftest import unique
from tests.helpers import Services, running_services


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings) as s:
        yield s


def test_a_given_request_id_is_echoed(services: Services) -> None:
    response = services.order.get(f"/orders/{unique('o')}", headers={"X-Request-Id": "abc-123"})
    assert response.headers["X-Request-Id"] == "abc-123"


@pytest.mark.parametrize("given", [None, "", "has space", "x" * 65, "new\nline"])
def test_a_missing_or_unsafe_request_id_is_replaced(services: Services, given: str | None) -> None:
    headers = {} if given is None else {"X-Request-Id": given}
    try:
        response = services.stock.get(f"/stock/{unique()}", headers=headers)
    except ValueError:  # werkzeug refuses a newline in a header before the app sees it
        return
    made = response.headers["X-Request-Id"]
    assert made and made != given and len(made) <= 64 and " " not in made


def test_the_order_service_sends_its_request_id_to_the_stock_service(services: Services) -> None:
    deps = services.order_app.extensions["orders"]
    seen: list[str | None] = []
    original = deps.stock.http.send

    def spy(request, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(request.headers.get("X-Request-Id"))
        return original(request, **kwargs)

    deps.stock.http.send = spy
    goods = unique()
    services.seed(goods, 2)
    placed = services.order.post(
        "/genOrder",
        json={"userId": unique("u"), "goodsIds": [goods]},
        headers={"X-Request-Id": "rid-7"},
    )
    assert placed.status_code == 200, placed.json
    assert seen and set(seen) == {"rid-7"}  # reduceStock and the stock-flow polls
