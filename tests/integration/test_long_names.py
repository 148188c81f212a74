"""An order at the documented limits end to end, in-process: genOrder -> httpx -> the stock
service, real ZooKeeper, Redis and each SQL database. Four locations with 64-character ids
(the longest IDENTIFIER_PATTERN takes), 3 units of a 64-character goods id at each: an order
of 10 is split over all four, so the stock event of its line names every part
(`<64>:3,<64>:3,<64>:3,<64>:1`, 266 characters), where the column once held 200 and the sale
ended 503 with its outcome unknown on PostgreSQL and MariaDB. Its cancel puts every unit back
where it was taken from."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from shared.config.settings import Settings
from stock_service.storage.tables import stock_outbox
from tests.conftest import ADMIN, unique
from tests.helpers import Services, running_services

LONGEST = 64  # shared.web.schemas.IDENTIFIER_PATTERN


def longest(prefix: str) -> str:
    """A fresh identifier of exactly the longest length the edge accepts."""
    return unique(prefix).ljust(LONGEST, "x")


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings) as s:
        yield s


def shelves(s: Services, goods: str, places: list[str], units: int) -> None:
    for priority, place in enumerate(places, start=1):
        made = s.stock.put(f"/locations/{place}", json={"priority": priority}, headers=ADMIN)
        assert made.status_code == 201, made.json
        put = s.stock.put(f"/stock/{goods}/locations/{place}", json={"num": units}, headers=ADMIN)
        assert put.status_code == 200, put.json


def json_of(answer: Any) -> Any:
    assert answer.json is not None, answer.data
    return answer.json


def levels(s: Services, goods: str) -> dict[str, int]:
    got = s.stock.get(f"/stock/{goods}")
    assert got.status_code == 200, got.json
    return {p["location"]: p["num"] for p in json_of(got)["locations"] if p["num"] or p["held"]}


def test_an_order_split_over_four_longest_locations_is_confirmed_and_cancelled_back(
    services: Services,
) -> None:
    s = services
    goods = longest("g")
    places = [longest(f"loc{i}") for i in range(4)]
    shelves(s, goods, places, 3)
    body = {"userId": longest("u"), "items": [{"goodsId": goods, "num": 10}]}
    placed = s.order.post("/genOrder", json=body)
    assert (placed.status_code, json_of(placed)["status"]) == (200, "CONFIRMED"), placed.json
    order_id = json_of(placed)["orderId"]
    taken = {(a["location"], a["num"]) for a in json_of(placed)["allocations"]}
    assert taken == {(places[0], 3), (places[1], 3), (places[2], 3), (places[3], 1)}
    assert levels(s, goods) == {places[3]: 2}
    with s.engine.connect() as conn:
        where = (stock_outbox.c.goods_id == goods) & (stock_outbox.c.kind == "deducted")
        [parts] = conn.execute(sa.select(stock_outbox.c.location).where(where)).scalars()
    assert parts == f"{places[0]}:3,{places[1]}:3,{places[2]}:3,{places[3]}:1"

    cancelled = s.order.post(f"/orders/{order_id}/cancel")
    assert (cancelled.status_code, json_of(cancelled)["status"]) == (200, "CANCELLED"), (
        cancelled.json
    )
    assert levels(s, goods) == dict.fromkeys(places, 3)
    assert s.level(goods) == 12
    with s.engine.connect() as conn:
        where = (stock_outbox.c.goods_id == goods) & (stock_outbox.c.kind == "returned")
        [parts] = conn.execute(sa.select(stock_outbox.c.location).where(where)).scalars()
    assert sorted(parts.split(",")) == sorted(
        f"{p}:{n}" for p, n in zip(places, (3, 3, 3, 1), strict=True)
    )
