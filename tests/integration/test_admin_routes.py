"""The admin routes (PUT /stock/{goodsId}, PUT /faults/{point}) need the bearer token: without
it 401 (with WWW-Authenticate) and nothing written; with no ADMIN_TOKEN configured they are off
(403); the other routes need no token."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from shared.config.settings import Settings
from tests.conftest import ADMIN, unique
from tests.helpers import Services, running_services


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings.with_(fault_injection=True)) as s:
        yield s


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong-token"},
        {"Authorization": "Bearer test-admin-toke"},  # a prefix of the right one
        {"Authorization": "test-admin-token"},  # no scheme
        {"Authorization": "Basic dGVzdC1hZG1pbi10b2tlbg=="},
    ],
)
def test_put_stock_without_the_token_is_401_and_writes_nothing(
    services: Services, headers: dict[str, str]
) -> None:
    goods = unique()
    response = services.stock.put(f"/stock/{goods}", json={"num": 5}, headers=headers)
    assert response.status_code == 401
    assert "Bearer" in response.json["error"]
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert services.level(goods) is None


def test_the_token_is_checked_before_the_body(services: Services) -> None:
    response = services.stock.put(f"/stock/{unique()}", data=b"{not json")
    assert response.status_code == 401  # a caller without the token learns nothing of the body


def test_put_stock_with_the_token_sets_the_level(services: Services) -> None:
    goods = unique()
    response = services.stock.put(f"/stock/{goods}", json={"num": 5}, headers=ADMIN)
    assert response.status_code == 200, response.json
    assert services.level(goods) == 5


def test_put_faults_needs_the_token_too(services: Services) -> None:
    body = {"value": 0, "times": 1}  # a delay of 0 s: harmless to whichever request meets it
    assert services.stock.put("/faults/delay_after_commit", json=body).status_code == 401
    armed = services.stock.put("/faults/delay_after_commit", json=body, headers=ADMIN)
    assert armed.status_code == 200, armed.json


def test_with_no_admin_token_configured_the_admin_routes_are_off(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("WARNING"), running_services(settings.with_(admin_token="")) as s:
        response = s.stock.put(f"/stock/{unique()}", json={"num": 5}, headers=ADMIN)
        assert response.status_code == 403
        assert "ADMIN_TOKEN" in response.json["error"]
    assert any("admin routes" in r.getMessage() for r in caplog.records)


def test_the_other_routes_need_no_token(services: Services) -> None:
    goods = unique()
    services.seed(goods, 3)
    assert services.stock.get(f"/stock/{goods}").status_code == 200
    placed = services.order.post("/genOrder", json={"userId": unique("u"), "goodsIds": [goods]})
    assert placed.status_code == 200, placed.json
