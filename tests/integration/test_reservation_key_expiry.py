"""A repeat of POST /reservations under its Idempotency-Key once the reservation's expiresAt
has passed (each database): past expiresAt a held reservation can only expire (a genOrder or a
DELETE is refused `expired`), so the repeat answers it expired, never 201 held, and GET says
the same; its units come back once, whichever of the repeat and the pass comes first."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from shared.config.settings import Settings
from tests.conftest import unique
from tests.helpers import Services, running_services
from tests.integration.test_reservation_keys import post
from tests.integration.test_reservations import (
    expires_in,
    expiry_pass,
    returns,
    state,
    stock_of,
)


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings) as s:
        yield s


def test_a_repeat_past_expires_at_answers_it_expired_and_its_units_come_back_once(
    services: Services,
) -> None:
    s, goods, key = services, unique(), unique("key")
    s.seed(goods, 5)
    first = post(s, key, goods)
    assert first.status_code == 201, first.json
    rid = first.json["reservationId"]
    expires_in(s, rid, -1.0)  # its time ran out; the reconciler's pass has not come yet
    body = {"userId": "u1", "items": [{"goodsId": goods, "num": 2}], "reservationId": rid}
    refused: Any = s.order.post("/genOrder", json=body)
    assert (refused.status_code, refused.json["refused"]) == (409, "expired"), refused.json
    repeat = post(s, key, goods)
    assert (repeat.status_code, repeat.json["state"]) == (200, "expired"), repeat.json
    assert repeat.headers["Idempotent-Replayed"] == "true" and repeat.json["reservationId"] == rid
    assert repeat.json["unitsReturned"] is True
    assert state(s, rid)["state"] == "expired"  # GET agrees with the repeat
    assert stock_of(s, goods) == (5, 0) and len(returns(s, rid)) == 1
    again = post(s, key, goods)
    assert (again.status_code, again.json["state"]) == (200, "expired"), again.json
    assert rid not in expiry_pass(s).expired  # the pass finds it expired already
    assert stock_of(s, goods) == (5, 0) and len(returns(s, rid)) == 1


def test_a_repeat_before_expires_at_still_answers_it_held(services: Services) -> None:
    s, goods, key = services, unique(), unique("key")
    s.seed(goods, 5)
    rid = post(s, key, goods).json["reservationId"]
    expires_in(s, rid, 30.0)
    repeat = post(s, key, goods)
    assert (repeat.status_code, repeat.json["state"]) == (201, "held"), repeat.json
    assert stock_of(s, goods) == (3, 2) and state(s, rid)["state"] == "held"
