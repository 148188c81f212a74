"""POST /reservations under an Idempotency-Key, against the real stack (each database): a
buyer's retry of a reservation it got no answer for holds nothing twice, whether it comes
after the first post or races it; the same key with another body is a 422 holding nothing."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import sqlalchemy as sa

from order_service.storage.tables import reservations
from shared.config.settings import Settings
from stock_service.storage.tables import stock_flow
from tests.conftest import unique
from tests.helpers import Services, running_services


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings) as s:
        yield s


def post(s: Services, key: str | None, goods: str, units: int = 2, ttl: int = 600) -> Any:
    body = {"userId": "u1", "items": [{"goodsId": goods, "num": units}], "ttlSeconds": ttl}
    headers = {"Idempotency-Key": key} if key else {}
    return s.order.post("/reservations", json=body, headers=headers)


def stock_of(s: Services, goods: str) -> tuple[int, int]:
    level = s.stock.get(f"/stock/{goods}").json
    return level["num"], level["held"]


def made_under(s: Services, key: str) -> list[str]:
    with s.engine.connect() as conn:
        query = sa.select(reservations.c.id).where(reservations.c.idempotency_key == key)
        return [str(r) for r in conn.execute(query).scalars()]


def deductions_of(s: Services, goods: str) -> int:
    with s.engine.connect() as conn:
        query = sa.select(sa.func.count()).where(stock_flow.c.goods_id == goods)
        return int(conn.execute(query).scalar_one())


def test_a_repeat_answers_the_reservation_it_made_and_holds_nothing_twice(
    services: Services,
) -> None:
    s, goods, key = services, unique(), unique("key")
    s.seed(goods, 5)
    first = post(s, key, goods)
    assert first.status_code == 201 and "Idempotent-Replayed" not in first.headers, first.json
    repeat = post(s, key, goods)
    assert (repeat.status_code, repeat.headers.get("Idempotent-Replayed")) == (201, "true")
    assert repeat.json["reservationId"] == first.json["reservationId"]
    assert repeat.json["expiresAt"] == first.json["expiresAt"]
    assert stock_of(s, goods) == (3, 2) and deductions_of(s, goods) == 1
    assert made_under(s, key) == [first.json["reservationId"]]


def test_a_repeat_after_a_release_answers_it_released(services: Services) -> None:
    s, goods, key = services, unique(), unique("key")
    s.seed(goods, 5)
    rid = post(s, key, goods).json["reservationId"]
    assert s.order.delete(f"/reservations/{rid}").status_code == 200
    repeat = post(s, key, goods)
    assert (repeat.status_code, repeat.json["state"]) == (200, "released"), repeat.json
    assert repeat.headers["Idempotent-Replayed"] == "true" and repeat.json["reservationId"] == rid
    assert stock_of(s, goods) == (5, 0) and deductions_of(s, goods) == 1


def test_a_repeat_of_a_refusal_is_the_same_refusal(services: Services) -> None:
    s, goods, key = services, unique(), unique("key")
    s.seed(goods, 1)
    first = post(s, key, goods)
    assert (first.status_code, first.json["state"]) == (409, "failed"), first.json
    s.seed(goods, 5)  # stock arrives: the key's reservation stays the one that failed
    repeat = post(s, key, goods)
    assert (repeat.status_code, repeat.json["state"]) == (409, "failed"), repeat.json
    assert repeat.json["reservationId"] == first.json["reservationId"]
    assert repeat.headers["Idempotent-Replayed"] == "true"
    assert stock_of(s, goods) == (5, 0) and deductions_of(s, goods) == 0


def test_posts_racing_with_one_key_hold_the_units_once(services: Services) -> None:
    s = services
    for _ in range(3):
        goods, key = unique(), unique("key")
        s.seed(goods, 5)
        with ThreadPoolExecutor(max_workers=6) as pool:
            answers = list(pool.map(lambda _, k=key, g=goods: post(s, k, g), range(6)))
        assert [a.status_code for a in answers] == [201] * 6, [a.json for a in answers]
        assert len({a.json["reservationId"] for a in answers}) == 1
        assert sum(a.headers.get("Idempotent-Replayed") == "true" for a in answers) == 5
        assert stock_of(s, goods) == (3, 2) and deductions_of(s, goods) == 1
        assert len(made_under(s, key)) == 1


def test_the_key_with_another_body_is_422_and_holds_nothing(services: Services) -> None:
    s, goods, key = services, unique(), unique("key")
    s.seed(goods, 5)
    rid = post(s, key, goods).json["reservationId"]
    for other in (post(s, key, goods, units=3), post(s, key, goods, ttl=60)):
        assert (other.status_code, other.json["reservationId"]) == (422, rid), other.json
        assert "different request" in other.json["error"]
    assert stock_of(s, goods) == (3, 2) and made_under(s, key) == [rid]


@pytest.mark.parametrize("key", ["", "x" * 129, "caf\u00e9", "a\x00b"])
def test_a_bad_key_is_400_and_nothing_is_written(services: Services, key: str) -> None:
    s, goods = services, unique()
    s.seed(goods, 5)
    body = {"items": [{"goodsId": goods, "num": 1}], "ttlSeconds": 60}
    try:
        answer = s.order.post("/reservations", json=body, headers={"Idempotency-Key": key})
    except ValueError:  # a header werkzeug's client itself refuses to send (the NUL)
        assert stock_of(s, goods) == (5, 0)
        return
    # A header the route cannot take is a 400 naming it, as genOrder's is.
    assert (answer.status_code, answer.json["field"]) == (400, "Idempotency-Key"), answer.json
    assert stock_of(s, goods) == (5, 0) and deductions_of(s, goods) == 0


def test_without_a_key_each_post_is_its_own_reservation(services: Services) -> None:
    s, goods = services, unique()
    s.seed(goods, 5)
    ids = {post(s, None, goods).json["reservationId"] for _ in range(2)}
    assert len(ids) == 2 and stock_of(s, goods) == (1, 4)
