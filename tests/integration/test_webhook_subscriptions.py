"""The subscriptions' routes (admin): each rule of a subscription refused with a 422 naming the
field, and nothing stored, on SQLite, PostgreSQL and MariaDB; a wrong JSON type a 400; a made
subscription's secret told once; read, listed, deleted; the dead letters and replays of an
unknown subscription a 404. The URLs accepted are IP literals of public addresses
(getaddrinfo answers them without asking a resolver), so nothing here needs the network."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from shared.config.settings import Settings
from stock_service.storage.tables import webhook_subscription
from tests.conftest import ADMIN, make_settings
from tests.helpers import Services, running_services

PUBLIC = "https://93.184.215.14/hooks"  # a public address, written as one


@pytest.fixture(scope="module")
def services(database_url: str, zk_server: Any, redis_server: Any) -> Iterator[Services]:
    with running_services(make_settings(database_url, zk_server, redis_server)) as s:
        yield s


def stored(services: Services) -> int:
    with services.engine.connect() as conn:
        return int(
            conn.execute(sa.select(sa.func.count()).select_from(webhook_subscription)).scalar_one()
        )


REFUSED = [
    ({"url": "ftp://93.184.215.14/x"}, "url", "http or https"),
    ({"url": "http://"}, "url", "host"),
    ({"url": "https://93.184.215.14/" + "a" * 2048}, "url", "2048"),
    ({"url": "http://127.0.0.1:8080/hook"}, "url", "WEBHOOK_ALLOW_PRIVATE"),
    ({"url": "http://localhost/hook"}, "url", "WEBHOOK_ALLOW_PRIVATE"),
    ({"url": "http://10.1.2.3/hook"}, "url", "private"),
    ({"url": "http://192.168.0.10/hook"}, "url", "private"),
    ({"url": "http://169.254.169.254/latest/meta-data"}, "url", "link-local"),
    ({"url": "http://[::1]/hook"}, "url", "loopback"),
    ({"url": "http://[::ffff:127.0.0.1]/hook"}, "url", "loopback"),
    ({"url": "http://224.0.0.1/hook"}, "url", "multicast"),
    ({"url": "http://0.0.0.0/hook"}, "url", "WEBHOOK_ALLOW_PRIVATE"),
    ({"url": "http://240.0.0.1/hook"}, "url", "reserved"),
    ({"url": "http://no-such-host.invalid/hook"}, "url", "does not resolve"),
    ({"url": "http://user:pw@93.184.215.14/hook"}, "url", "password"),
    ({"url": "http://93.184.215.14/a b"}, "url", "spaces"),
    ({"url": PUBLIC, "kinds": ["deducted", "nope"]}, "kinds", "no event kind"),
    ({"url": PUBLIC, "goodsIds": ["ok", "a\x00b"]}, "goodsIds", "no goods id"),
    ({"url": PUBLIC, "goodsIds": ["g" * 65]}, "goodsIds", "no goods id"),
    ({"url": PUBLIC, "goodsIds": [""]}, "goodsIds", "no goods id"),
    ({"url": PUBLIC, "goodsIds": [f"g{i}" for i in range(1001)]}, "goodsIds", "at most 1000"),
    ({"url": PUBLIC, "secret": "s" * 15}, "secret", "16 to 256"),
    ({"url": PUBLIC, "secret": "s" * 257}, "secret", "16 to 256"),
    ({"url": PUBLIC, "secret": "a-long-enough-secret\n"}, "secret", "control"),
    ({"url": PUBLIC, "secret": "a-long-enough\x00secret"}, "secret", "control"),
]


@pytest.mark.parametrize(("body", "field", "says"), REFUSED)
def test_a_subscription_breaking_a_rule_is_422_naming_it_and_stores_nothing(
    services: Services, body: dict[str, Any], field: str, says: str
) -> None:
    before = stored(services)
    answer = services.stock.post("/subscriptions", json=body, headers=ADMIN)
    assert answer.status_code == 422, answer.json
    assert answer.json["field"] == field
    assert says in answer.json["error"]
    assert stored(services) == before


@pytest.mark.parametrize(
    "body",
    [{}, {"url": 7}, {"url": PUBLIC, "kinds": "deducted"}, {"url": PUBLIC, "secret": 12345}],
)
def test_a_body_of_the_wrong_types_is_400_and_stores_nothing(
    services: Services, body: dict[str, Any]
) -> None:
    before = stored(services)
    answer = services.stock.post("/subscriptions", json=body, headers=ADMIN)
    assert answer.status_code == 400, answer.json
    assert stored(services) == before


def test_the_routes_need_the_admin_token(services: Services) -> None:
    before = stored(services)
    assert services.stock.post("/subscriptions", json={"url": PUBLIC}).status_code == 401
    assert services.stock.get("/subscriptions").status_code == 401
    assert stored(services) == before


def test_a_subscription_made_tells_its_secret_once_then_is_read_listed_and_deleted(
    services: Services,
) -> None:
    made = services.stock.post(
        "/subscriptions",
        json={"url": PUBLIC, "kinds": ["out_of_stock", "deducted"], "goodsIds": ["g-1", "G-1"]},
        headers=ADMIN,
    )
    assert made.status_code == 201, made.json
    sub = made.json
    assert re.fullmatch(r"[0-9a-f]{64}", sub["secret"])
    assert sub["kinds"] == ["out_of_stock", "deducted"]
    assert sub["goodsIds"] == ["g-1", "G-1"]  # goods ids differing in case are two
    read = services.stock.get(f"/subscriptions/{sub['id']}", headers=ADMIN)
    assert read.status_code == 200
    assert read.json == {k: v for k, v in sub.items() if k != "secret"}
    listed = services.stock.get("/subscriptions", headers=ADMIN).json["subscriptions"]
    assert [s for s in listed if s["id"] == sub["id"]] == [read.json]
    assert all("secret" not in s for s in listed)
    deleted = services.stock.delete(f"/subscriptions/{sub['id']}", headers=ADMIN)
    assert deleted.status_code == 204
    assert services.stock.get(f"/subscriptions/{sub['id']}", headers=ADMIN).status_code == 404
    assert services.stock.delete(f"/subscriptions/{sub['id']}", headers=ADMIN).status_code == 404


def test_a_secret_given_is_kept(services: Services) -> None:
    secret = "s3cret-of-the-receiver-" + "x" * 10
    made = services.stock.post(
        "/subscriptions", json={"url": PUBLIC, "secret": secret}, headers=ADMIN
    )
    assert made.status_code == 201, made.json
    assert made.json["secret"] == secret
    with services.engine.connect() as conn:
        kept = conn.execute(
            sa.select(webhook_subscription.c.secret).where(
                webhook_subscription.c.id == made.json["id"]
            )
        ).scalar_one()
    assert kept == secret


def test_the_dead_letters_of_an_unknown_subscription_are_404(services: Services) -> None:
    assert services.stock.get("/subscriptions/nope/failed", headers=ADMIN).status_code == 404
    replay = services.stock.post("/subscriptions/nope/failed/replay", json={}, headers=ADMIN)
    assert replay.status_code == 404


def test_private_addresses_are_allowed_when_the_setting_says(settings: Settings) -> None:
    with running_services(settings.with_(webhook_allow_private=True)) as s:
        made = s.stock.post(
            "/subscriptions", json={"url": "http://127.0.0.1:9/hook"}, headers=ADMIN
        )
        assert made.status_code == 201, made.json
        still = s.stock.post("/subscriptions", json={"url": "gopher://127.0.0.1/"}, headers=ADMIN)
        assert still.status_code == 422
