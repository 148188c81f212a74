"""Stock in more than one place: locations, the allocation rule on a stack with three of them,
partial fill, transfers whose legs move once whatever the retries, and each route's bad input.
Real ZooKeeper, Redis and each SQL database; every test checks the locations' ledger after
(inventory/check/locations.py: no level below zero, each replays from its entries, every
transfer's legs once, the total equal to its entries)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import redis as redis_lib
import sqlalchemy as sa

from inventory.check.locations import check_locations, read_places
from shared.config.settings import Settings
from stock_service.storage.tables import stock_outbox
from tests.conftest import ADMIN, unique
from tests.helpers import Services, running_services


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings) as s:
        yield s


@pytest.fixture
def places(services: Services) -> dict[str, str]:
    """Three locations of this test's own, best first: near (1), mid (2), far (3)."""
    names = {"near": unique("near"), "mid": unique("mid"), "far": unique("far")}
    for priority, name in enumerate(names.values(), start=1):
        put = services.stock.put(f"/locations/{name}", json={"priority": priority}, headers=ADMIN)
        assert put.status_code == 201, put.json
    return names


def stock_at(s: Services, goods: str, levels: dict[str, int]) -> None:
    for location, num in levels.items():
        put = s.stock.put(f"/stock/{goods}/locations/{location}", json={"num": num}, headers=ADMIN)
        assert put.status_code == 200, put.json


def levels(s: Services, goods: str) -> dict[str, int]:
    got = s.stock.get(f"/stock/{goods}")
    assert got.status_code == 200, got.json
    return {p["location"]: p["num"] for p in got.json["locations"] if p["num"] or p["held"]}


def deduct(s: Services, lines: list[dict[str, Any]], fill: str | None = None) -> Any:
    flag = unique("f")
    with redis_lib.Redis.from_url(s.settings.redis_url) as client:
        client.set(flag, "1")  # the order service's operation flag
    query = f"?fill={fill}" if fill else ""
    return s.stock.put(f"/reduceStock/{flag}{query}", json=lines)


def allocated(answer: Any) -> set[tuple[str, str, int]]:
    return {(a["goodsId"], a["location"], a["num"]) for a in answer.json["allocations"]}


def ledger_ok(s: Services, prefix: str = "") -> None:
    for result in check_locations(read_places(s.engine, prefix)):
        assert result.ok, (result.invariant, result.detail)


def test_a_stack_without_locations_answers_as_before_with_the_default(services: Services) -> None:
    s = services
    goods = unique()
    s.seed(goods, 5)
    answer = deduct(s, [{"goodsId": goods, "goodsNum": 2}])
    assert answer.status_code == 200, answer.json
    assert allocated(answer) == {(goods, "default", 2)}
    assert levels(s, goods) == {"default": 3}
    assert s.stock.get(f"/stock/{goods}").json["inTransit"] == 0
    ledger_ok(s, goods)


def test_an_order_one_location_can_fill_is_never_split(
    services: Services, places: dict[str, str]
) -> None:
    s, near, mid, far = services, places["near"], places["mid"], places["far"]
    a, b = unique("a"), unique("b")
    stock_at(s, a, {near: 2, mid: 5, far: 5})
    stock_at(s, b, {near: 0, mid: 3, far: 3})
    # near has too few of a: the best location that has the whole order is mid
    assert allocated(deduct(s, [{"goodsId": a, "goodsNum": 4}])) == {(a, mid, 4)}
    # near cannot give b: both lines from one location, far (mid has 1 a left)
    two = deduct(s, [{"goodsId": a, "goodsNum": 2}, {"goodsId": b, "goodsNum": 1}])
    assert allocated(two) == {(a, far, 2), (b, far, 1)}
    # no one location has both: each line from one location (a from near, b from mid)
    both = deduct(s, [{"goodsId": a, "goodsNum": 2}, {"goodsId": b, "goodsNum": 3}])
    assert allocated(both) == {(a, near, 2), (b, mid, 3)}
    assert levels(s, a) == {mid: 1, far: 3}
    ledger_ok(s, a)
    ledger_ok(s, b)


def test_a_line_is_split_by_priority_only_when_no_location_can_fill_it(
    services: Services, places: dict[str, str]
) -> None:
    s, near, mid, far = services, places["near"], places["mid"], places["far"]
    goods = unique()
    stock_at(s, goods, {near: 2, mid: 1, far: 3})
    split = deduct(s, [{"goodsId": goods, "goodsNum": 5}])
    assert split.status_code == 200, split.json
    assert allocated(split) == {(goods, near, 2), (goods, mid, 1), (goods, far, 2)}
    assert split.json["flows"][0]["num"] == 5  # one flow per goods id, as ever
    history = s.stock.get(f"/stock/{goods}/history?limit=1").json["entries"][0]
    assert history["kind"] == "deducted"
    assert {(p["location"], p["num"]) for p in history["allocations"]} == {
        (near, 2),
        (mid, 1),
        (far, 2),
    }
    # each unit goes back to where it came from
    flag = split.json["flag"]
    returned = s.stock.put(f"/returnStock/{flag}")
    assert returned.status_code == 200, returned.json
    assert levels(s, goods) == {near: 2, mid: 1, far: 3}
    ledger_ok(s, goods)


def test_a_named_location_is_the_only_one_and_an_inactive_one_is_never_used(
    services: Services, places: dict[str, str]
) -> None:
    s, near, mid, far = services, places["near"], places["mid"], places["far"]
    goods = unique()
    stock_at(s, goods, {near: 4, mid: 4, far: 4})
    named = deduct(s, [{"goodsId": goods, "goodsNum": 3, "location": far}])
    assert allocated(named) == {(goods, far, 3)}
    short = deduct(s, [{"goodsId": goods, "goodsNum": 2, "location": far}])
    assert short.status_code == 409, short.json
    assert short.json["shortfalls"][0]["available"] == 1
    assert s.stock.put(f"/locations/{near}", json={"priority": 1, "active": False}, headers=ADMIN)
    assert allocated(deduct(s, [{"goodsId": goods, "goodsNum": 2}])) == {(goods, mid, 2)}
    assert levels(s, goods)[near] == 4
    ledger_ok(s, goods)


def test_partial_fill_takes_what_is_there_and_the_rest_stays_refused(
    services: Services, places: dict[str, str]
) -> None:
    s, near, mid = services, places["near"], places["mid"]
    a, b = unique("a"), unique("b")
    stock_at(s, a, {near: 1, mid: 2})
    stock_at(s, b, {near: 0})
    lines = [{"goodsId": a, "goodsNum": 5}, {"goodsId": b, "goodsNum": 1}]
    part = deduct(s, lines, fill="partial")
    assert part.status_code == 200, part.json
    assert part.json["outcome"] == "deducted"
    assert [(f["goodsId"], f["num"]) for f in part.json["flows"]] == [(a, 3)]
    short = {x["goodsId"]: (x["requested"], x["available"]) for x in part.json["shortfalls"]}
    assert short == {a: (5, 3), b: (1, 0)}
    # stock that comes back is not sold to the flag again: it was decided once
    stock_at(s, b, {near: 9})
    again = s.stock.put(f"/reduceStock/{part.json['flag']}?fill=partial", json=lines)
    assert again.json["outcome"] == "duplicate"
    assert levels(s, b) == {near: 9}
    # nothing at all to fill: a refusal, as all-or-nothing would be
    stock_at(s, a, {near: 0, mid: 0})
    none = deduct(s, [{"goodsId": a, "goodsNum": 1}], fill="partial")
    assert (none.status_code, none.json["outcome"]) == (409, "insufficient")
    # all or nothing stays the default
    stock_at(s, a, {mid: 2})
    whole = deduct(s, [{"goodsId": a, "goodsNum": 3}])
    assert whole.status_code == 409 and levels(s, a) == {mid: 2}
    ledger_ok(s, a)
    ledger_ok(s, b)


def test_a_transfer_moves_its_units_once_whatever_the_retries(
    services: Services, places: dict[str, str]
) -> None:
    s, near, far = services, places["near"], places["far"]
    goods = unique()
    stock_at(s, goods, {near: 6})
    body = {"goodsId": goods, "from": near, "to": far, "units": 4, "reference": unique("T")}
    sent = s.stock.post("/transfers", json=body, headers=ADMIN)
    assert sent.status_code == 201, sent.json
    assert sent.json["state"] == "in_transit"
    view = s.stock.get(f"/stock/{goods}").json
    assert (view["num"], view["inTransit"], levels(s, goods)) == (2, 4, {near: 2})
    # the same POST again: the same transfer, nothing taken twice
    repeat = s.stock.post("/transfers", json=body, headers=ADMIN)
    assert (repeat.status_code, repeat.json["transferId"]) == (200, sent.json["transferId"])
    assert levels(s, goods) == {near: 2}
    tid = sent.json["transferId"]
    with ThreadPoolExecutor(8) as pool:
        answers = list(
            pool.map(lambda _: s.stock.post(f"/transfers/{tid}/receive", headers=ADMIN), range(8))
        )
    assert {a.status_code for a in answers} == {200}
    assert levels(s, goods) == {near: 2, far: 4}
    assert s.stock.get(f"/stock/{goods}").json["inTransit"] == 0
    cancel = s.stock.post(f"/transfers/{tid}/cancel", headers=ADMIN)
    assert cancel.status_code == 409, cancel.json
    kinds = [e["kind"] for e in s.stock.get(f"/stock/{goods}/history").json["entries"]]
    assert kinds.count("transfer_out") == 1 and kinds.count("transfer_in") == 1
    ledger_ok(s, goods)


def test_a_transfer_cancelled_in_transit_goes_back_to_its_source(
    services: Services, places: dict[str, str]
) -> None:
    s, near, mid = services, places["near"], places["mid"]
    goods = unique()
    stock_at(s, goods, {mid: 3})
    body = {"goodsId": goods, "from": mid, "to": near, "units": 3, "reference": unique("T")}
    tid = s.stock.post("/transfers", json=body, headers=ADMIN).json["transferId"]
    # units in transit are in no location: an order finds none
    assert deduct(s, [{"goodsId": goods, "goodsNum": 1}]).status_code == 409
    assert s.stock.post(f"/transfers/{tid}/cancel", headers=ADMIN).json["state"] == "cancelled"
    assert s.stock.post(f"/transfers/{tid}/cancel", headers=ADMIN).status_code == 200
    assert s.stock.post(f"/transfers/{tid}/receive", headers=ADMIN).status_code == 409
    assert levels(s, goods) == {mid: 3}
    ledger_ok(s, goods)


def test_bad_input_is_refused_and_writes_nothing(
    services: Services, places: dict[str, str]
) -> None:
    s, near, mid = services, places["near"], places["mid"]
    goods = unique()
    stock_at(s, goods, {near: 2})
    nowhere = unique("nowhere")
    cases = [
        (s.stock.put(f"/stock/{goods}/locations/{nowhere}", json={"num": 1}, headers=ADMIN), 404),
        (
            s.stock.post(
                f"/stock/{goods}/adjustments",
                json={"delta": 1, "reason": "restock", "location": nowhere},
                headers=ADMIN,
            ),
            404,
        ),
        (deduct(s, [{"goodsId": goods, "goodsNum": 1, "location": nowhere}]), 404),
        (deduct(s, [{"goodsId": goods, "goodsNum": 1}], fill="most"), 422),
        (
            deduct(
                s,
                [
                    {"goodsId": goods, "goodsNum": 1, "location": near},
                    {"goodsId": goods, "goodsNum": 1, "location": mid},
                ],
            ),
            422,
        ),
        (
            s.stock.put(
                "/reduceStock",
                json={
                    "flags": [
                        {
                            "flag": unique("f"),
                            "lines": [{"goodsId": goods, "goodsNum": 1}],
                            "fill": "most",
                        }
                    ]
                },
            ),
            422,
        ),
    ]
    transfer = {"goodsId": goods, "from": near, "to": mid, "units": 3, "reference": unique("T")}
    cases += [
        (s.stock.post("/transfers", json=transfer, headers=ADMIN), 409),  # beyond the source
        (s.stock.post("/transfers", json={**transfer, "to": nowhere}, headers=ADMIN), 404),
        (s.stock.post("/transfers", json={**transfer, "to": near}, headers=ADMIN), 422),
        (s.stock.post("/transfers", json={**transfer, "units": 0}, headers=ADMIN), 400),
        (s.stock.post(f"/transfers/{unique('t')}/receive", headers=ADMIN), 404),
        (s.stock.post("/transfers", json={**transfer, "units": 1}), 401),
        (s.stock.put(f"/locations/{unique('x')}", json={"priority": -1}, headers=ADMIN), 400),
    ]
    for answer, status in cases:
        assert answer.status_code == status, (status, answer.json)
        assert "error" in answer.json
    sent = s.stock.post("/transfers", json={**transfer, "units": 1}, headers=ADMIN)
    assert sent.status_code == 201
    other = s.stock.post("/transfers", json={**transfer, "units": 2}, headers=ADMIN)
    assert other.status_code == 409, other.json  # the reference names another transfer
    assert levels(s, goods) == {near: 1}
    ledger_ok(s, goods)


def test_the_stock_events_and_the_history_carry_the_location(
    services: Services, places: dict[str, str]
) -> None:
    s, near = services, places["near"]
    goods = unique()
    stock_at(s, goods, {near: 3})
    deduct(s, [{"goodsId": goods, "goodsNum": 1}])
    entries = s.stock.get(f"/stock/{goods}/history").json["entries"]
    assert [(e["kind"], e["location"]) for e in entries] == [
        ("deducted", near),
        ("adjusted", near),
    ]
    with s.engine.connect() as conn:
        query = sa.select(stock_outbox.c.kind, stock_outbox.c.location)
        rows = {tuple(r) for r in conn.execute(query.where(stock_outbox.c.goods_id == goods))}
    assert rows >= {("deducted", near), ("adjusted", near)}


def test_held_units_are_counted_where_they_were_taken_and_released_there(
    services: Services, places: dict[str, str]
) -> None:
    s, near, mid = services, places["near"], places["mid"]
    goods = unique()
    stock_at(s, goods, {near: 1, mid: 2})
    flag = unique("f")
    with redis_lib.Redis.from_url(s.settings.redis_url) as client:
        client.set(flag, "1")
    held = s.stock.put(f"/reduceStock/{flag}?hold=true", json=[{"goodsId": goods, "goodsNum": 3}])
    assert allocated(held) == {(goods, near, 1), (goods, mid, 2)}
    view = s.stock.get(f"/stock/{goods}").json
    assert view["held"] == 3
    assert {p["location"]: p["held"] for p in view["locations"]} == {"default": 0, near: 1, mid: 2}
    assert s.stock.put(f"/holds/{flag}/release").json["released"] is True
    view = s.stock.get(f"/stock/{goods}").json
    assert view["held"] == 0 and all(p["held"] == 0 for p in view["locations"])
    ledger_ok(s, goods)


def test_a_neighbour_naming_an_unknown_location_changes_no_other_answer(
    services: Services, places: dict[str, str]
) -> None:
    """The batched reduceStock answers the unknown location for its own flag alone (what the
    single route answers 404): the other flags of the call are deducted as they would be."""
    s, near = services, places["near"]
    goods = unique()
    stock_at(s, goods, {near: 3})
    good, bad, other = unique("f"), unique("f"), unique("f")
    with redis_lib.Redis.from_url(s.settings.redis_url) as client:
        for flag in (good, bad, other):
            client.set(flag, "1")
    line = {"goodsId": goods, "goodsNum": 1}
    flags = [
        {"flag": good, "lines": [{**line, "location": near}]},
        {"flag": bad, "lines": [{**line, "location": unique("nowhere")}]},
        {"flag": other, "lines": [line], "fill": "partial"},
    ]
    answer = s.stock.put("/reduceStock", json={"flags": flags})
    assert answer.status_code == 200, answer.json
    results = {r["flag"]: r for r in answer.json["results"]}
    assert results[bad]["outcome"] == "unknown_location"
    assert results[bad]["locations"] == [flags[1]["lines"][0]["location"]]
    assert (results[good]["outcome"], results[other]["outcome"]) == ("deducted", "deducted")
    assert levels(s, goods) == {near: 1}
    assert s.stock.get(f"/flags/{bad}").json["decision"] is None  # nothing written for it
    ledger_ok(s, goods)
