"""genOrder with `fill: partial` and lines that name their location, end to end in-process:
order service -> httpx -> stock service, real ZooKeeper, Redis and SQL databases. A partial
order is confirmed with what the stock could fill, each line's `filled` in its answers, and
every way the order side confirms an order (the deduction's answer, the polled flows, the
stock database's decision, the reconciler) reads fewer units than ordered as a confirmation,
never as a failure or an unknown. An ordinary order is what it always was."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from order_service.placing.client import StockClient
from order_service.placing.retry import CallPolicy
from order_service.settling.reconcile import reconcile
from order_service.storage.tables import order_allocation
from shared.config.settings import Settings
from tests.conftest import ADMIN, unique
from tests.helpers import Services, running_services
from tests.integration.test_settlement import Failing, first_reduce_answer_lost, stock_route


@pytest.fixture(params=[32, 1], ids=["combining", "one-at-a-time"])
def services(settings: Settings, request: pytest.FixtureRequest) -> Iterator[Services]:
    with running_services(settings.with_(deduct_batch_max=request.param)) as s:
        yield s


def add_location(s: Services, priority: int = 0) -> str:
    location = unique("loc")
    body = {"priority": priority, "active": True}
    answer = s.stock.put(f"/locations/{location}", json=body, headers=ADMIN)
    assert answer.status_code in (200, 201), answer.json
    return location


def seed_at(s: Services, goods: str, location: str, num: int) -> None:
    answer = s.stock.put(f"/stock/{goods}/locations/{location}", json={"num": num}, headers=ADMIN)
    assert answer.status_code in (200, 201), answer.json


def at(s: Services, goods: str) -> dict[str, int]:
    """The goods id's level at each location."""
    return {p["location"]: p["num"] for p in s.stock.get(f"/stock/{goods}").json["locations"]}


def order(
    s: Services, items: list[dict[str, Any]], fill: Any = None, key: str | None = None
) -> Any:
    body: dict[str, Any] = {"userId": f"u-{key}" if key else unique("u"), "items": items}
    if fill is not None:
        body["fill"] = fill
    headers = {"Idempotency-Key": key} if key else {}
    return s.order.post("/genOrder", json=body, headers=headers)


def lines(body: dict[str, Any]) -> dict[str, tuple[int, int | None]]:
    """(units ordered, units filled) per goods id, of an answer's or an order's lines."""
    return {i["goodsId"]: (i["num"], i.get("filled")) for i in body["items"]}


def flowed(s: Services, flag: str) -> dict[str, int]:
    return {f["goods_id"]: f["num"] for f in s.flows(flag=flag)}


def test_a_partial_order_is_confirmed_with_what_the_stock_could_fill(services: Services) -> None:
    s = services
    a, b, c = unique(), unique(), unique()
    s.seed(a, 3)
    s.seed(b, 0)
    s.seed(c, 4)
    items = [{"goodsId": a, "num": 5}, {"goodsId": b, "num": 2}, {"goodsId": c, "num": 4}]
    answer = order(s, items, "partial")
    assert (answer.status_code, answer.json["status"]) == (200, "CONFIRMED"), answer.json
    assert answer.json["fill"] == "partial" and answer.json["result"] == "success"
    assert lines(answer.json) == {a: (5, 3), b: (2, 0), c: (4, 4)}
    shortfalls = {f["goodsId"]: (f["requested"], f["available"]) for f in answer.json["shortfalls"]}
    assert shortfalls == {a: (5, 3), b: (2, 0)}
    order_id = answer.json["orderId"]
    # The flows carry the units filled; a goods id with none filled has no flow.
    assert flowed(s, order_id) == {a: 3, c: 4}
    assert (s.level(a), s.level(b), s.level(c)) == (0, 0, 0)
    view = s.order.get(f"/orders/{order_id}").json
    assert view["status"] == "CONFIRMED" and view["fill"] == "partial"
    assert lines(view) == {a: (5, 3), b: (2, 0), c: (4, 4)}
    assert {d["goods_id"]: d["filled"] for d in s.details_of(order_id)} == {a: 3, b: 0, c: 4}


def test_a_partial_order_with_stock_for_all_is_filled_whole(services: Services) -> None:
    s = services
    a = unique()
    s.seed(a, 5)
    answer = order(s, [{"goodsId": a, "num": 5}], "partial")
    assert (answer.status_code, answer.json["status"]) == (200, "CONFIRMED")
    assert lines(answer.json) == {a: (5, 5)} and "shortfalls" not in answer.json
    assert s.level(a) == 0


def test_a_partial_order_with_nothing_to_fill_fails_as_any_order_does(services: Services) -> None:
    s = services
    a, user = unique(), unique("u")
    s.seed(a, 0)
    body = {"userId": user, "items": [{"goodsId": a, "num": 2}], "fill": "partial"}
    answer = s.order.post("/genOrder", json=body)
    assert (answer.status_code, answer.json["status"]) == (409, "FAILED")
    assert answer.json["reason"] == "insufficient_stock"
    assert lines(answer.json) == {a: (2, 0)}
    assert s.flows(flag=answer.json["orderId"]) == []
    [row] = s.orders_of(user)
    assert row["status"] == "FAILED" and row["fill_mode"] == "partial"


def test_all_or_nothing_is_the_default_and_an_ordinary_answer_is_unchanged(
    services: Services,
) -> None:
    s = services
    a = unique()
    s.seed(a, 3)
    for fill in (None, "all"):
        refused = order(s, [{"goodsId": a, "num": 5}], fill)
        assert (refused.status_code, refused.json["status"]) == (409, "FAILED")
        assert s.flows(flag=refused.json["orderId"]) == []
    placed = order(s, [{"goodsId": a, "num": 3}])
    assert placed.status_code == 200 and s.level(a) == 0
    assert set(placed.json) == {"orderId", "status", "result"}
    view = s.order.get(f"/orders/{placed.json['orderId']}").json
    assert view["items"] == [{"goodsId": a, "num": 3}] and "fill" not in view


def test_a_line_naming_its_location_is_taken_from_there_alone(services: Services) -> None:
    s = services
    a, north = unique(), add_location(s)
    s.seed(a, 10)
    seed_at(s, a, north, 2)
    assert at(s, a) == {"default": 10, north: 2}
    placed = order(s, [{"goodsId": a, "num": 2, "location": north}])
    assert (placed.status_code, placed.json["status"]) == (200, "CONFIRMED"), placed.json
    assert placed.json["allocations"] == [{"goodsId": a, "location": north, "num": 2}]
    assert placed.json["items"] == [{"goodsId": a, "num": 2, "filled": 2, "location": north}]
    assert at(s, a) == {"default": 10, north: 0}
    view = s.order.get(f"/orders/{placed.json['orderId']}").json
    assert view["allocations"] == placed.json["allocations"]
    assert view["items"] == placed.json["items"] and view["fill"] == "all"
    # Empty there: refused, though the default location has plenty.
    refused = order(s, [{"goodsId": a, "num": 1, "location": north}])
    assert (refused.status_code, refused.json["status"]) == (409, "FAILED")
    assert lines(refused.json) == {a: (1, 0)}
    assert at(s, a) == {"default": 10, north: 0}


def test_a_partial_line_at_a_location_fills_from_it_alone(services: Services) -> None:
    s = services
    a, b, north = unique(), unique(), add_location(s)
    s.seed(a, 10)
    s.seed(b, 4)
    seed_at(s, a, north, 1)
    items = [{"goodsId": a, "num": 3, "location": north}, {"goodsId": b, "num": 2}]
    placed = order(s, items, "partial")
    assert (placed.status_code, placed.json["status"]) == (200, "CONFIRMED"), placed.json
    assert lines(placed.json) == {a: (3, 1), b: (2, 2)}
    assert {(x["goodsId"], x["location"], x["num"]) for x in placed.json["allocations"]} >= {
        (a, north, 1)
    }
    assert at(s, a) == {"default": 10, north: 0} and s.level(b) == 2
    with s.engine.connect() as conn:
        kept = conn.execute(
            sa.select(order_allocation).where(order_allocation.c.order_id == placed.json["orderId"])
        ).mappings()
        assert (a, north, 1) in {(k["goods_id"], k["location_id"], k["num"]) for k in kept}


def test_an_unknown_location_rejects_the_order_and_keeps_nothing(services: Services) -> None:
    s = services
    a, user, nowhere = unique(), unique("u"), unique("loc")
    s.seed(a, 5)
    body = {"userId": user, "items": [{"goodsId": a, "num": 1, "location": nowhere}]}
    answer = s.order.post("/genOrder", json=body)
    assert answer.status_code == 422, answer.json
    assert answer.json["locations"] == [nowhere] and "location" in answer.json["error"]
    assert s.orders_of(user) == [] and s.level(a) == 5


def test_an_unknown_location_among_a_batch_of_orders_rejects_only_its_own(
    services: Services,
) -> None:
    s = services
    a, nowhere = unique(), unique("loc")
    s.seed(a, 100)
    start = threading.Barrier(8)

    def buy(i: int) -> Any:
        start.wait()
        line: dict[str, Any] = {"goodsId": a, "num": 1}
        if i == 3:
            line["location"] = nowhere
        return s.order_app.test_client().post(
            "/genOrder", json={"userId": unique("u"), "items": [line], "fill": "partial"}
        )

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(buy, range(8)))
    assert answers[3].status_code == 422 and answers[3].json["locations"] == [nowhere]
    others = [x for i, x in enumerate(answers) if i != 3]
    assert {(x.status_code, x.json["status"]) for x in others} == {(200, "CONFIRMED")}
    assert s.level(a) == 93


@pytest.mark.parametrize(
    "fill", ["ALL", "partially", "", None, 1, True, ["partial"]], ids=lambda v: repr(v)
)
def test_a_fill_other_than_all_or_partial_is_refused_with_422_and_nothing_written(
    services: Services, fill: Any
) -> None:
    s = services
    a, user = unique(), unique("u")
    s.seed(a, 5)
    body = {"userId": user, "items": [{"goodsId": a, "num": 1}], "fill": fill}
    answer = s.order.post("/genOrder", json=body, headers={"Idempotency-Key": unique("k")})
    assert answer.status_code == 422, answer.json
    assert answer.json["field"] == "fill" and '"all" or "partial"' in answer.json["error"]
    assert s.orders_of(user) == [] and s.level(a) == 5


def test_a_goods_id_whose_lines_name_two_locations_is_refused(services: Services) -> None:
    s = services
    a, user, north = unique(), unique("u"), add_location(s)
    s.seed(a, 5)
    seed_at(s, a, north, 5)
    items = [{"goodsId": a, "num": 1, "location": north}, {"goodsId": a, "num": 1}]
    answer = s.order.post("/genOrder", json={"userId": user, "items": items})
    assert answer.status_code == 422 and answer.json["goodsIds"] == [a], answer.json
    assert s.orders_of(user) == [] and s.level(a) == 10
    # Repeated with the same location, the lines are summed as ever.
    same = [{"goodsId": a, "num": 1, "location": north}] * 2
    placed = s.order.post("/genOrder", json={"userId": user, "items": same})
    assert placed.status_code == 200 and lines(placed.json) == {a: (2, 2)}


def test_buyers_of_partial_orders_share_out_what_there_is(services: Services) -> None:
    s = services
    a = unique()
    s.seed(a, 10)
    buyers = 8
    start = threading.Barrier(buyers)

    def buy(_: int) -> Any:
        start.wait()
        body = {"userId": unique("u"), "items": [{"goodsId": a, "num": 3}], "fill": "partial"}
        return s.order_app.test_client().post("/genOrder", json=body)

    with ThreadPoolExecutor(buyers) as pool:
        answers = list(pool.map(buy, range(buyers)))
    statuses = {(x.status_code, x.json["status"]) for x in answers}
    assert statuses <= {(200, "CONFIRMED"), (409, "FAILED")}, [x.json for x in answers]
    filled = [lines(x.json)[a][1] or 0 for x in answers]
    assert sum(filled) == 10 and s.level(a) == 0
    for x, units in zip(answers, filled, strict=True):
        assert flowed(s, x.json["orderId"]).get(a, 0) == units
        assert (x.json["status"] == "CONFIRMED") == (units > 0)


def test_cancelling_a_partial_order_returns_what_was_filled(services: Services) -> None:
    s = services
    a = unique()
    s.seed(a, 2)
    placed = order(s, [{"goodsId": a, "num": 5}], "partial")
    assert lines(placed.json) == {a: (5, 2)} and s.level(a) == 0
    cancelled = s.order.post(f"/orders/{placed.json['orderId']}/cancel")
    assert (cancelled.status_code, cancelled.json["status"]) == (200, "CANCELLED")
    assert s.level(a) == 2
    view = s.order.get(f"/orders/{placed.json['orderId']}").json
    assert view["status"] == "CANCELLED" and lines(view) == {a: (5, 2)}


def test_a_repeat_of_the_key_answers_the_same_fill(services: Services) -> None:
    s = services
    a, key = unique(), unique("key")
    s.seed(a, 2)
    first = order(s, [{"goodsId": a, "num": 5}], "partial", key)
    again = order(s, [{"goodsId": a, "num": 5}], "partial", key)
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert (again.status_code, again.json["orderId"]) == (200, first.json["orderId"])
    assert lines(again.json) == lines(first.json) == {a: (5, 2)} and again.json["fill"] == "partial"
    # The same key with all or nothing is another request.
    other = order(s, [{"goodsId": a, "num": 5}], None, key)
    assert other.status_code == 422 and other.json["orderId"] == first.json["orderId"]
    assert s.level(a) == 0


class Sent(httpx.BaseTransport):
    """Passes every request on, and keeps what each reduceStock call sent."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.sent: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if stock_route(request) == "reduceStock":
            request.read()
            self.sent.append(request)
        return self.inner.handle_request(request)


def test_an_ordinary_order_sends_what_it_always_sent(settings: Settings) -> None:
    with running_services(settings, wrap_transport=Sent) as s:
        a = unique()
        s.seed(a, 5)
        assert order(s, [{"goodsId": a, "num": 2}]).status_code == 200
        assert order(s, [{"goodsId": a, "num": 9}], "partial").status_code == 200
        plain, partial = s.order_app.extensions["orders"].stock.http._transport.sent
        assert plain.url.path == f"/reduceStock/{plain.url.path.split('/')[-1]}"
        assert not plain.url.params
        assert (
            plain.content
            == httpx.Request("PUT", "http://x", json=[{"goodsId": a, "goodsNum": 2}]).content
        )
        assert partial.url.params == httpx.QueryParams({"fill": "partial"})


def test_a_partial_order_whose_answer_was_lost_is_confirmed_from_its_flows(
    settings: Settings,
) -> None:
    """The deduction's answer (with its flows) is lost; the retry is a `duplicate`: the polled
    flows, and the stock database's decision, carry fewer units than ordered, and confirm it."""
    made: list[Failing] = []

    def wrap(inner: httpx.BaseTransport) -> httpx.BaseTransport:
        made.append(Failing(inner, lambda _r: False, lose=first_reduce_answer_lost()))
        return made[0]

    with running_services(settings, wrap_transport=wrap) as s:
        a = unique()
        s.seed(a, 2)
        placed = order(s, [{"goodsId": a, "num": 5}], "partial")
        assert (placed.status_code, placed.json["status"]) == (200, "CONFIRMED"), placed.json
        assert "GET stockFlow" in made[0].seen
        assert lines(placed.json) == {a: (5, 2)} and s.level(a) == 0
        view = s.order.get(f"/orders/{placed.json['orderId']}").json
        assert lines(view) == {a: (5, 2)}


def test_the_reconciler_confirms_a_partial_order_with_fewer_units(settings: Settings) -> None:
    """Deducted, and neither the flows nor the decision readable: PENDING (503). The
    reconciler reads the decision, deducted with 2 of 5 units: CONFIRMED, filled 2."""

    def wrap(inner: httpx.BaseTransport) -> httpx.BaseTransport:
        failing = {"stockFlow", "flags"}
        return Failing(inner, lambda r: stock_route(r) in failing, lose=first_reduce_answer_lost())

    with running_services(settings, wrap_transport=wrap) as s:
        a = unique()
        s.seed(a, 2)
        placed = order(s, [{"goodsId": a, "num": 5}], "partial")
        assert (placed.status_code, placed.json["status"]) == (503, "PENDING"), placed.json
        order_id = placed.json["orderId"]
        transport = httpx.WSGITransport(app=s.stock_app)
        with StockClient("http://stock", CallPolicy(5, 0, 10, 0), transport=transport) as stock:
            report = reconcile(s.order_app.extensions["orders"].store, stock, timedelta(0))
        assert order_id in report.confirmed and order_id not in report.mismatched
        view = s.order.get(f"/orders/{order_id}").json
        assert view["status"] == "CONFIRMED"
        assert lines(view) == {a: (5, 2)}
        assert s.level(a) == 0


def test_a_partial_hold_awaits_payment_with_what_was_filled(services: Services) -> None:
    s = services
    a = unique()
    s.seed(a, 2)
    body = {
        "userId": unique("u"),
        "items": [{"goodsId": a, "num": 3}],
        "fill": "partial",
        "payWithinSeconds": 60,
    }
    held = s.order.post("/genOrder", json=body)
    assert (held.status_code, held.json["status"]) == (200, "AWAITING_PAYMENT"), held.json
    assert lines(held.json) == {a: (3, 2)} and "payBy" in held.json
    paid = s.order.post(f"/orders/{held.json['orderId']}/pay")
    assert (paid.status_code, paid.json["status"]) == (200, "CONFIRMED")
    assert s.stock.get(f"/stock/{a}").json["held"] == 0 and s.level(a) == 0


def lost_first_answer(settings: Settings) -> tuple[Any, list[Failing]]:
    made: list[Failing] = []

    def wrap(inner: httpx.BaseTransport) -> httpx.BaseTransport:
        made.append(Failing(inner, lambda _r: False, lose=first_reduce_answer_lost()))
        return made[0]

    return running_services(settings, wrap_transport=wrap), made


def test_a_located_order_whose_answer_was_lost_is_confirmed_from_its_location(
    settings: Settings,
) -> None:
    """The polled flows say how much was filled: 2 of 4, all from the location it named."""
    context, made = lost_first_answer(settings)
    with context as s:
        a, north = unique(), add_location(s)
        s.seed(a, 5)
        seed_at(s, a, north, 2)
        placed = order(s, [{"goodsId": a, "num": 4, "location": north}], "partial")
        assert (placed.status_code, placed.json["status"]) == (200, "CONFIRMED"), placed.json
        assert "GET stockFlow" in made[0].seen and "GET flags" in made[0].seen
        assert lines(placed.json) == {a: (4, 2)}
        assert at(s, a) == {"default": 5, north: 0}


def test_a_located_order_whose_answer_was_lost_keeps_its_allocations(settings: Settings) -> None:
    """The stock database's decision (GET /flags) says where the units came from: the order
    keeps it, as it keeps a deduction's answer's allocations."""
    context, _ = lost_first_answer(settings)
    with context as s:
        a, north = unique(), add_location(s)
        s.seed(a, 5)
        seed_at(s, a, north, 2)
        placed = order(s, [{"goodsId": a, "num": 4, "location": north}], "partial")
        where = [{"goodsId": a, "location": north, "num": 2}]
        assert placed.json.get("allocations") == where
        assert s.order.get(f"/orders/{placed.json['orderId']}").json["allocations"] == where
