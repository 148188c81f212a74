"""Backorder limits per location (docs/backorders.md): a line with fill=backorder naming a
location takes what that location has and owes the rest within both that location's limit
and the goods id's; arrivals at a location serve, oldest first, the lines naming it or naming
none. Real ZooKeeper, Redis and each SQL database (SQLite, PostgreSQL, MariaDB)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import redis as redis_lib
import sqlalchemy as sa

from inventory.check.backorders import check_cap, check_fill_order, read_backorders
from shared.config.settings import Settings
from stock_service.storage.tables import backorder, backorder_fill
from tests.conftest import ADMIN, unique
from tests.helpers import Services, running_services
from tests.integration.test_backorders import ledger_holds


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings) as s:
        yield s


def place(s: Services, priority: int) -> str:
    name = unique("loc")
    made = s.stock.put(f"/locations/{name}", json={"priority": priority}, headers=ADMIN)
    assert made.status_code == 201, made.json
    return name


def policy(s: Services, goods: str, n: int, locations: dict[str, Any] | None = None) -> Any:
    body: dict[str, Any] = {"backorderLimit": n}
    if locations is not None:
        body["locations"] = locations
    return s.stock.put(f"/stock/{goods}/policy", json=body, headers=ADMIN)


def order(s: Services, goods: str, num: int, location: str | None = None) -> Any:
    flag = unique("f")
    with redis_lib.Redis.from_url(s.settings.redis_url) as client:
        client.set(flag, "1")
    line: dict[str, Any] = {"goodsId": goods, "goodsNum": num}
    if location is not None:
        line["location"] = location
    return s.stock.put(f"/reduceStock/{flag}?fill=backorder", json=[line])


def arrive(s: Services, goods: str, n: int, location: str | None = None) -> None:
    body: dict[str, Any] = {"delta": n, "reason": "restock"}
    if location is not None:
        body["location"] = location
    made = s.stock.post(f"/stock/{goods}/adjustments", json=body, headers=ADMIN)
    assert made.status_code == 201, made.json


def at(s: Services, goods: str, location: str, n: int) -> None:
    put = s.stock.put(f"/stock/{goods}/locations/{location}", json={"num": n}, headers=ADMIN)
    assert put.status_code == 200, put.json


def filled(s: Services, goods: str) -> list[tuple[str, int, str]]:
    """The goods id's lines in their order: flag, units filled, state."""
    with s.engine.connect() as conn:
        rows = conn.execute(
            sa.select(backorder.c.flag, backorder.c.filled, backorder.c.state)
            .where(backorder.c.goods_id == goods)
            .order_by(backorder.c.position)
        )
        return [(r.flag, int(r.filled), r.state) for r in rows]


def checks_hold(s: Services, goods: str) -> None:
    """B1 and B2, per location, as a chaos run's checks read them from the stock database."""
    data = read_backorders(s.engine, goods)
    for result in (check_cap(data), check_fill_order(data)):
        assert result.ok, result.numbers


def owed_at_holds(s: Services, goods: str, location: str, cap: int) -> int:
    """The units owed to lines naming `location`, replayed over the ledger, never above `cap`;
    what they owe at the end."""
    with s.engine.connect() as conn:
        named = {
            r.flag: r
            for r in conn.execute(
                sa.select(backorder).where(
                    backorder.c.goods_id == goods, backorder.c.location == location
                )
            )
        }
        moves = [(int(r.position), int(r.wanted)) for r in named.values()]
        fills = sa.select(backorder_fill).where(backorder_fill.c.goods_id == goods)
        moves += [(int(f.seq), -int(f.num)) for f in conn.execute(fills) if f.flag in named]
    owed = 0
    for _seq, delta in sorted(moves):
        owed += delta
        assert owed <= cap, (owed, cap)
    return owed


@pytest.mark.parametrize(
    "goods_limit,location_limit,owed,bound",
    [(20, 10, 10, "location"), (4, 10, 4, "goods")],
    ids=["the-location-limit-binds", "the-goods-limit-binds"],
)
def test_fifty_buyers_naming_a_location_owe_exactly_the_tighter_limit(
    services: Services, goods_limit: int, location_limit: int, owed: int, bound: str
) -> None:
    s = services
    goods, north = unique(), place(s, 5)
    s.seed(goods, 5)  # the default location's 5 are no named line's
    at(s, goods, north, 3)
    assert policy(s, goods, goods_limit, {north: location_limit}).status_code == 200
    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda _: order(s, goods, 1, north), range(50)))
    outcomes = [a.json["outcome"] for a in answers]
    assert outcomes.count("deducted") == 3, outcomes
    assert outcomes.count("backordered") == owed
    assert outcomes.count("insufficient") == 50 - 3 - owed
    refused = [a for a in answers if a.json["outcome"] == "insufficient"]
    assert all(a.status_code == 409 for a in refused)
    said = {tuple(sorted(a.json["shortfalls"][0]["backorderLimit"].items())) for a in refused}
    if bound == "location":
        assert said == {(("limit", location_limit), ("location", north), ("owed", owed))}
    else:
        assert said == {(("limit", goods_limit), ("owed", owed))}
    got = s.stock.get(f"/stock/{goods}/policy").json
    assert (got["owed"], got["owedAt"]) == (owed, {north: owed}), got
    assert s.level(goods) == 5  # the default's, untouched
    assert owed_at_holds(s, goods, north, location_limit) == owed
    ledger_holds(s, goods, goods_limit)
    checks_hold(s, goods)


def test_arrivals_serve_the_lines_that_may_take_them_oldest_first(services: Services) -> None:
    s = services
    goods, north, south = unique(), place(s, 1), place(s, 2)
    s.seed(goods, 0)
    assert policy(s, goods, 20, {north: 5}).status_code == 200
    a = order(s, goods, 2, north).json["flag"]
    b = order(s, goods, 2).json["flag"]  # names none: any location
    c = order(s, goods, 1, south).json["flag"]
    d = order(s, goods, 1, north).json["flag"]
    arrive(s, goods, 3, south)  # a waits (north only); b, then c, take south's
    assert filled(s, goods) == [
        (a, 0, "waiting"),
        (b, 2, "filled"),
        (c, 1, "filled"),
        (d, 0, "waiting"),
    ]
    arrive(s, goods, 1)  # at the default: no waiting line may take it
    assert [f for _, f, _ in filled(s, goods)] == [0, 2, 1, 0] and s.level(goods) == 1
    arrive(s, goods, 3, north)  # a first, whole, then d
    assert filled(s, goods) == [
        (a, 2, "filled"),
        (b, 2, "filled"),
        (c, 1, "filled"),
        (d, 1, "filled"),
    ]
    assert s.stock.get(f"/stock/{goods}/policy").json["owedAt"] == {}
    # a cancel gives back at north; the next north line is served from it
    e = order(s, goods, 2, north).json
    assert e["outcome"] == "backordered" and e["backordered"] == [{"goodsId": goods, "num": 2}]
    assert s.stock.put(f"/returnStock/{a}").json["outcome"] == "returned"
    assert filled(s, goods)[-1] == (e["flag"], 2, "filled")
    ledger_holds(s, goods, 20)
    data = read_backorders(s.engine, goods)
    assert {w.flag: w.location for w in data.lines[goods]} == {
        a: north,
        b: None,
        c: south,
        d: north,
        e["flag"]: north,
    }
    assert [(h.flag, h.at) for h in data.fills[goods]][:2] == [(b, (south,)), (c, (south,))]
    checks_hold(s, goods)


def test_the_policy_is_set_read_and_checked(services: Services) -> None:
    s = services
    goods, north = unique(), place(s, 3)
    s.seed(goods, 1)
    assert policy(s, goods, 6, {north: 2, "default": 1}).json == {
        "goodsId": goods,
        "backorderLimit": 6,
        "locations": {"default": 1, north: 2},
    }
    before = s.stock.get(f"/stock/{goods}/policy").json
    assert before == {
        "goodsId": goods,
        "backorderLimit": 6,
        "locations": {"default": 1, north: 2},
        "owed": 0,
        "owedAt": {},
    }
    too_many = {f"x{i}": 1 for i in range(101)}
    bad = [
        {north: -1},
        {north: 10**12},
        {"no/such": 1},
        {north: 1, north.upper(): 1},
        too_many,
    ]
    for locations in bad:
        refused = policy(s, goods, 3, locations)
        assert (refused.status_code, refused.json.get("field")) == (422, "locations"), refused.json
    unknown = policy(s, goods, 3, {unique("nowhere"): 1})
    assert unknown.status_code == 404 and len(unknown.json["locations"]) == 1
    assert policy(s, goods, -1, {north: 1}).status_code == 422
    assert policy(s, unique("nope"), 3, {north: 1}).status_code == 404
    noauth = s.stock.put(f"/stock/{goods}/policy", json={"backorderLimit": 2, "locations": {}})
    assert noauth.status_code == 401
    assert s.stock.get(f"/stock/{goods}/policy").json == before  # nothing written
    assert s.stock.get(f"/stock/{unique('nope')}/policy").status_code == 404
    assert policy(s, goods, 6).json["locations"] == {}  # replaced: none but the goods id's
    # a line at the default location, its limit 1 once set again
    assert policy(s, goods, 6, {"default": 1}).status_code == 200
    assert order(s, goods, 2, "default").json["outcome"] == "backordered"
    refused = order(s, goods, 1, "default").json
    assert refused["shortfalls"][0]["backorderLimit"] == {
        "limit": 1,
        "owed": 1,
        "location": "default",
    }


def test_a_located_backorder_order_is_backordered_and_refused_past_the_location(
    services: Services,
) -> None:
    s = services
    goods, north = unique(), place(s, 4)
    s.seed(goods, 0)
    at(s, goods, north, 1)
    assert policy(s, goods, 10, {north: 2}).status_code == 200

    def buy(num: int) -> Any:
        item = {"goodsId": goods, "num": num, "location": north}
        body = {"userId": unique("u"), "items": [item], "fill": "backorder"}
        return s.order_app.test_client().post("/genOrder", json=body)

    first = buy(3)  # takes north's 1, owes 2 there
    assert first.status_code == 200, first.json
    assert first.json["status"] == "BACKORDERED"
    assert first.json["backordered"] == [{"goodsId": goods, "num": 2}]
    second = buy(1)  # north's limit of 2 is owed already
    assert second.status_code == 409 and second.json["status"] == "FAILED", second.json
    assert s.stock.get(f"/stock/{goods}/policy").json["owedAt"] == {north: 2}
