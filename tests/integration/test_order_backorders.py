"""genOrder with `fill: backorder`, end to end in-process: order service -> httpx -> stock
service, real ZooKeeper, Redis and each SQL database. What is on hand is taken and the rest
owed within the goods id's backorder limit: the order is BACKORDERED (200, its units owed per
line in `backordered`), CONFIRMED by the elected reconciler's pass once every line is filled
(units arriving go to the oldest line first), and a cancel gives back what it took and was
handed and gives up its place. Past the limit it is refused as all or nothing is: FAILED."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from order_service.placing.client import StockClient
from order_service.placing.retry import CallPolicy
from order_service.settling.reconcile import ReconcileReport, reconcile
from shared.config.settings import Settings
from stock_service.storage.tables import backorder
from tests.conftest import ADMIN, unique
from tests.helpers import Services, running_services
from tests.integration.test_order_partial_fill import Sent
from tests.integration.test_settlement import Failing, first_reduce_answer_lost, stock_route


@pytest.fixture(params=[32, 1], ids=["combining", "one-at-a-time"])
def services(settings: Settings, request: pytest.FixtureRequest) -> Iterator[Services]:
    with running_services(settings.with_(deduct_batch_max=request.param)) as s:
        yield s


def limit(s: Services, goods: str, n: int) -> None:
    answer = s.stock.put(f"/stock/{goods}/policy", json={"backorderLimit": n}, headers=ADMIN)
    assert answer.status_code == 200, answer.json


def restock(s: Services, goods: str, n: int) -> None:
    body = {"delta": n, "reason": "restock"}
    made = s.stock.post(f"/stock/{goods}/adjustments", json=body, headers=ADMIN)
    assert made.status_code == 201, made.json


def buy(s: Services, goods: str, num: int = 1, **extra: Any) -> Any:
    body = {"userId": unique("u"), "items": [{"goodsId": goods, "num": num}], "fill": "backorder"}
    return s.order_app.test_client().post("/genOrder", json={**body, **extra})


def owed(s: Services, goods: str) -> int:
    return int(s.stock.get(f"/stock/{goods}").json["owed"])


def view(s: Services, order_id: str) -> dict[str, Any]:
    answer = s.order.get(f"/orders/{order_id}")
    assert answer.status_code == 200, answer.json
    return dict(answer.json)


def lines(body: dict[str, Any]) -> dict[str, tuple[int, int | None]]:
    """(units ordered, units filled) per goods id."""
    return {i["goodsId"]: (i["num"], i.get("filled")) for i in body["items"]}


def waiting_in_line(s: Services, goods: str) -> list[str]:
    """The flags (order ids) of the goods id's lines, in their place in line."""
    with s.engine.connect() as conn:
        query = sa.select(backorder.c.flag).where(backorder.c.goods_id == goods)
        return [r.flag for r in conn.execute(query.order_by(backorder.c.position))]


def a_pass(s: Services) -> ReconcileReport:
    """One pass of the reconciler, as the existing reconciler tests run it (no PENDING order
    is old enough to settle: only the BACKORDERED ones, and what is due anyway)."""
    transport = httpx.WSGITransport(app=s.stock_app)
    with StockClient("http://stock", CallPolicy(5, 0, 10, 0), transport=transport) as stock:
        return reconcile(s.order_app.extensions["orders"].store, stock, timedelta(hours=1))


def test_fifty_buyers_beyond_on_hand_owe_exactly_the_limit(services: Services) -> None:
    """The issue's "Done when": 50 concurrent buyers of a unit each against 3 on hand and a
    backorder limit of 20: 3 CONFIRMED, exactly 20 units owed (BACKORDERED), the other 27
    refused as all or nothing is; restocks fill the oldest lines first and the pass confirms
    exactly those orders."""
    s = services
    goods = unique()
    s.seed(goods, 3)
    limit(s, goods, 20)
    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda _: buy(s, goods), range(50)))
    by_status: dict[str, list[Any]] = {}
    for answer in answers:
        by_status.setdefault(answer.json["status"], []).append(answer)
    assert {k: len(v) for k, v in by_status.items()} == {
        "CONFIRMED": 3,
        "BACKORDERED": 20,
        "FAILED": 27,
    }, [a.json for a in answers]
    for answer in by_status["BACKORDERED"]:
        assert answer.status_code == 200 and answer.json["result"] == "success"
        assert answer.json["fill"] == "backorder" and "shortfalls" not in answer.json
        assert answer.json["backordered"] == [{"goodsId": goods, "num": 1}]
        assert lines(answer.json) == {goods: (1, 0)}
    for answer in by_status["CONFIRMED"]:
        assert answer.status_code == 200 and lines(answer.json) == {goods: (1, 1)}
        assert "backordered" not in answer.json
    for answer in by_status["FAILED"]:
        assert answer.status_code == 409 and answer.json["reason"] == "insufficient_stock"
        assert s.flows(flag=answer.json["orderId"]) == []
    assert owed(s, goods) == 20 and s.level(goods) == 0
    backordered = {a.json["orderId"] for a in by_status["BACKORDERED"]}
    line = waiting_in_line(s, goods)
    assert set(line) == backordered

    restock(s, goods, 5)  # the five oldest lines, nobody else
    report = a_pass(s)
    assert set(report.backorders.confirmed) & backordered == set(line[:5])
    for order_id in line[:5]:
        confirmed = view(s, order_id)
        assert confirmed["status"] == "CONFIRMED" and lines(confirmed) == {goods: (1, 1)}
        assert "backordered" not in confirmed
    for order_id in line[5:]:
        assert view(s, order_id)["status"] == "BACKORDERED"
    assert owed(s, goods) == 15 and s.level(goods) == 0
    assert not set(a_pass(s).backorders.confirmed) & backordered  # nothing more to confirm


def test_restocks_fill_the_oldest_in_parts_and_the_pass_confirms_each_when_whole(
    services: Services,
) -> None:
    s = services
    goods = unique()
    s.seed(goods, 1)
    limit(s, goods, 10)
    first = buy(s, goods, 3)  # takes the one on hand, owes 2
    assert (first.status_code, first.json["status"]) == (200, "BACKORDERED"), first.json
    assert first.json["backordered"] == [{"goodsId": goods, "num": 2}]
    assert lines(first.json) == {goods: (3, 1)}
    second, third = buy(s, goods, 1), buy(s, goods, 2)
    ids = [a.json["orderId"] for a in (first, second, third)]
    assert [a.json["backordered"] for a in (second, third)] == [
        [{"goodsId": goods, "num": 1}],
        [{"goodsId": goods, "num": 2}],
    ]
    placed = view(s, ids[0])
    assert placed["status"] == "BACKORDERED" and placed["fill"] == "backorder"
    assert placed["backordered"] == first.json["backordered"] and lines(placed) == {goods: (3, 1)}

    restock(s, goods, 2)  # the rest of the oldest
    report = a_pass(s)
    assert ids[0] in report.backorders.confirmed
    done = view(s, ids[0])
    assert done["status"] == "CONFIRMED" and lines(done) == {goods: (3, 3)}
    assert done["reason"].startswith("backorder_filled")
    assert {d["goods_id"]: d["filled"] for d in s.details_of(ids[0])} == {goods: 3}

    restock(s, goods, 2)  # the second whole, one of the third's two
    report = a_pass(s)
    assert ids[1] in report.backorders.confirmed and ids[2] in report.backorders.progressed
    assert view(s, ids[1])["status"] == "CONFIRMED"
    partly = view(s, ids[2])  # what it still owes, as the pass last saw it
    assert partly["status"] == "BACKORDERED" and lines(partly) == {goods: (2, 1)}
    assert partly["backordered"] == [{"goodsId": goods, "num": 1}]

    restock(s, goods, 1)
    assert ids[2] in a_pass(s).backorders.confirmed
    assert view(s, ids[2])["status"] == "CONFIRMED" and owed(s, goods) == 0
    assert s.level(goods) == 0


def test_a_cancel_gives_back_what_it_had_and_gives_up_its_place(services: Services) -> None:
    s = services
    goods = unique()
    s.seed(goods, 1)
    limit(s, goods, 10)
    first, second = buy(s, goods, 3), buy(s, goods, 2)  # 1 taken, 2 owed; 2 owed
    assert [a.json["status"] for a in (first, second)] == ["BACKORDERED", "BACKORDERED"]
    restock(s, goods, 1)  # one more for the first: it has 2 of 3
    assert owed(s, goods) == 3
    cancelled = s.order.post(f"/orders/{first.json['orderId']}/cancel")
    assert (cancelled.status_code, cancelled.json["status"]) == (200, "CANCELLED"), cancelled.json
    # Its 2 units came back and went to the next line, whole; it owes nothing now.
    flag = s.stock.get(f"/flags/{first.json['orderId']}").json
    assert flag["decision"] == "returned"
    assert s.level(goods) == 0 and owed(s, goods) == 0
    again = s.order.post(f"/orders/{first.json['orderId']}/cancel")
    assert (again.status_code, again.json["status"]) == (200, "CANCELLED")
    assert s.level(goods) == 0  # nothing returned twice
    assert second.json["orderId"] in a_pass(s).backorders.confirmed
    assert view(s, first.json["orderId"])["status"] == "CANCELLED"
    # The confirmed one's cancel returns all of it: what it was handed.
    back = s.order.post(f"/orders/{second.json['orderId']}/cancel")
    assert (back.status_code, back.json["status"]) == (200, "CANCELLED")
    assert s.level(goods) == 2


def test_a_cancelled_backorder_is_never_confirmed_by_a_later_pass(services: Services) -> None:
    s = services
    goods = unique()
    s.seed(goods, 0)
    limit(s, goods, 5)
    placed = buy(s, goods, 2)
    order_id = placed.json["orderId"]
    assert s.order.post(f"/orders/{order_id}/cancel").json["status"] == "CANCELLED"
    restock(s, goods, 2)  # nobody waits: back on the shelf
    assert order_id not in a_pass(s).backorders.confirmed
    assert view(s, order_id)["status"] == "CANCELLED" and s.level(goods) == 2


def test_without_room_under_the_limit_it_fails_and_with_stock_it_is_confirmed(
    services: Services,
) -> None:
    s = services
    goods = unique()
    s.seed(goods, 2)  # the limit is 0, the default
    refused = buy(s, goods, 3)
    assert (refused.status_code, refused.json["status"]) == (409, "FAILED")
    assert refused.json["reason"] == "insufficient_stock" and "backordered" not in refused.json
    whole = buy(s, goods, 2)
    assert (whole.status_code, whole.json["status"]) == (200, "CONFIRMED"), whole.json
    assert lines(whole.json) == {goods: (2, 2)} and whole.json["fill"] == "backorder"
    assert owed(s, goods) == 0 and s.level(goods) == 0


def test_a_repeat_of_the_key_answers_the_backorder(services: Services) -> None:
    s = services
    goods, key = unique(), unique("key")
    s.seed(goods, 0)
    limit(s, goods, 5)
    body = {"userId": "u-" + key, "items": [{"goodsId": goods, "num": 2}], "fill": "backorder"}
    first = s.order.post("/genOrder", json=body, headers={"Idempotency-Key": key})
    again = s.order.post("/genOrder", json=body, headers={"Idempotency-Key": key})
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert (again.status_code, again.json["status"]) == (200, "BACKORDERED")
    assert again.json["orderId"] == first.json["orderId"]
    assert again.json["backordered"] == first.json["backordered"] == [{"goodsId": goods, "num": 2}]
    assert owed(s, goods) == 2  # one line, once
    other = s.order.post(
        "/genOrder", json={**body, "fill": "all"}, headers={"Idempotency-Key": key}
    )
    assert other.status_code == 422


@pytest.mark.parametrize(
    "extra,field",
    [
        ({"payWithinSeconds": 60}, "payWithinSeconds"),
        ({"fill": "BACKORDER"}, "fill"),
        ({"fill": "backorders"}, "fill"),
    ],
    ids=["with-a-hold", "upper-case", "unknown"],
)
def test_bad_input_is_refused_with_422_naming_the_field_and_nothing_written(
    services: Services, extra: dict[str, Any], field: str
) -> None:
    s = services
    goods, user = unique(), unique("u")
    s.seed(goods, 1)
    limit(s, goods, 5)
    body: dict[str, Any] = {
        "userId": user,
        "items": [{"goodsId": goods, "num": 3}],
        "fill": "backorder",
        **extra,
    }
    answer = s.order.post("/genOrder", json=body, headers={"Idempotency-Key": unique("k")})
    assert answer.status_code == 422, answer.json
    assert answer.json["field"] == field and field in answer.json["error"], answer.json
    assert s.orders_of(user) == [] and s.level(goods) == 1 and owed(s, goods) == 0


def test_an_order_of_a_reservation_cannot_backorder(services: Services) -> None:
    s = services
    goods = unique()
    s.seed(goods, 2)
    body = {"items": [{"goodsId": goods, "num": 2}], "ttlSeconds": 600}
    rid = s.order.post("/reservations", json=body).json["reservationId"]
    answer = buy(s, goods, 2, reservationId=rid)
    assert (answer.status_code, answer.json["field"]) == (422, "fill"), answer.json
    assert s.order.get(f"/reservations/{rid}").json["state"] == "held"


def test_the_stock_service_is_sent_fill_backorder_only_when_asked(settings: Settings) -> None:
    with running_services(settings.with_(deduct_batch_max=1), wrap_transport=Sent) as s:
        goods = unique()
        s.seed(goods, 5)
        limit(s, goods, 5)
        plain = {"userId": unique("u"), "items": [{"goodsId": goods, "num": 2}]}
        assert s.order.post("/genOrder", json=plain).status_code == 200
        assert buy(s, goods, 4).json["status"] == "BACKORDERED"
        sent = s.order_app.extensions["orders"].stock.http._transport.sent
        was = httpx.Request("PUT", "http://x", json=[{"goodsId": goods, "goodsNum": 2}])
        assert not sent[0].url.params and sent[0].content == was.content
        assert sent[1].url.params == httpx.QueryParams({"fill": "backorder"})


def lost_answer(settings: Settings, also_fail: frozenset[str] = frozenset()) -> Any:
    def wrap(inner: httpx.BaseTransport) -> httpx.BaseTransport:
        fail = also_fail
        return Failing(inner, lambda r: stock_route(r) in fail, lose=first_reduce_answer_lost())

    return running_services(settings.with_(deduct_batch_max=1), wrap_transport=wrap)


def test_a_backorder_whose_answer_was_lost_is_backordered_from_its_decision(
    settings: Settings,
) -> None:
    """The answer lost, the retry a `duplicate`: the units owed are in no flow, so the stock
    database's decision (GET /flags) says what the order is."""
    with lost_answer(settings) as s:
        goods = unique()
        s.seed(goods, 1)
        limit(s, goods, 5)
        placed = buy(s, goods, 3)
        assert (placed.status_code, placed.json["status"]) == (200, "BACKORDERED"), placed.json
        assert placed.json["backordered"] == [{"goodsId": goods, "num": 2}]
        assert lines(view(s, placed.json["orderId"])) == {goods: (3, 1)}
        assert owed(s, goods) == 2


def test_the_reconciler_settles_a_pending_backorder_as_backordered(settings: Settings) -> None:
    """Deducted with units owed, and nothing readable in the request: PENDING (503). The
    reconciler's settle path finds lines still waiting: BACKORDERED, not CONFIRMED; its pass
    confirms it once they are filled."""
    with lost_answer(settings, frozenset({"stockFlow", "flags"})) as s:
        goods = unique()
        s.seed(goods, 1)
        limit(s, goods, 5)
        placed = buy(s, goods, 3)
        assert (placed.status_code, placed.json["status"]) == (503, "PENDING"), placed.json
        order_id = placed.json["orderId"]
        transport = httpx.WSGITransport(app=s.stock_app)
        with StockClient("http://stock", CallPolicy(5, 0, 10, 0), transport=transport) as stock:
            store = s.order_app.extensions["orders"].store
            report = reconcile(store, stock, timedelta(0))
            assert order_id in report.backordered and order_id not in report.confirmed
            settled = view(s, order_id)
            assert settled["status"] == "BACKORDERED" and lines(settled) == {goods: (3, 1)}
            assert settled["backordered"] == [{"goodsId": goods, "num": 2}]
            restock(s, goods, 2)
            assert order_id in reconcile(store, stock, timedelta(0)).backorders.confirmed
        assert view(s, order_id)["status"] == "CONFIRMED" and s.level(goods) == 0
