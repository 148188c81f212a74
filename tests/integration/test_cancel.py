"""Cancel an order and return its stock exactly once, with Seata's three TCC hazards: a cancel
repeated (idempotence), a cancel before the deduction ever happened (empty rollback), and a
deduction that arrives after its cancel (suspension). Real ZooKeeper, Redis, each SQL database.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import httpx
import pytest
import redis as redis_lib
import sqlalchemy as sa

from order_service.placing.client import StockClient
from order_service.placing.retry import CallPolicy
from order_service.settling.reconcile import reconcile
from order_service.storage import transitions
from shared.config.settings import Settings
from stock_service.storage.tables import stock_flow, stock_return
from tests.conftest import unique
from tests.helpers import PauseAt, Services, running_services


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings) as s:
        yield s


def place(s: Services, lines: dict[str, int], **extra: Any) -> Any:
    items = [{"goodsId": g, "num": n} for g, n in lines.items()]
    return s.order.post("/genOrder", json={"userId": unique("u"), "items": items, **extra})


def rows(s: Services, table: sa.Table, flag: str) -> list[tuple[str, int]]:
    with s.engine.connect() as conn:
        found = conn.execute(sa.select(table.c.goods_id, table.c.num).where(table.c.flag == flag))
        return sorted((r.goods_id, r.num) for r in found)


def test_a_confirmed_order_cancelled_twice_returns_its_stock_once(services: Services) -> None:
    s = services
    a, b = unique(), unique()
    s.seed(a, 5)
    s.seed(b, 5)
    order = place(s, {a: 2, b: 1}).json
    assert order["status"] == "CONFIRMED"
    first = s.order.post(f"/orders/{order['orderId']}/cancel")
    assert (first.status_code, first.json["status"]) == (200, "CANCELLED"), first.json
    assert (s.level(a), s.level(b)) == (5, 5)
    again = s.order.post(f"/orders/{order['orderId']}/cancel")  # idempotence
    assert (again.status_code, again.json["status"]) == (200, "CANCELLED")
    assert (s.level(a), s.level(b)) == (5, 5)
    flag = order["orderId"]
    assert rows(s, stock_return, flag) == rows(s, stock_flow, flag) == sorted([(a, 2), (b, 1)])
    returned = s.stock.put(f"/returnStock/{flag}").json  # the stock service's own repeat
    assert returned["outcome"] == "returned" and len(returned["returns"]) == 2
    assert (s.level(a), s.level(b)) == (5, 5)


def test_a_cancel_before_the_deduction_voids_the_flag_and_a_late_deduction_is_refused(
    services: Services,
) -> None:
    """Empty rollback, then suspension: the order is cancelled while its deduction has not
    reached the stock service; the cancel records that it found none, so the deduction that
    arrives afterwards is refused."""
    s = services
    goods = unique()
    s.seed(goods, 5)
    store = s.order_app.extensions["orders"].store
    order_id = unique("o")
    transitions.create_pending(store, order_id, unique("u"), {goods: 1}, None, None)
    redis_lib.Redis.from_url(s.settings.redis_url).set(order_id, "orderId", ex=60)
    cancelled = s.order.post(f"/orders/{order_id}/cancel")
    assert (cancelled.status_code, cancelled.json["status"]) == (200, "CANCELLED")
    assert "nothing was deducted" in cancelled.json["reason"]
    redis_lib.Redis.from_url(s.settings.redis_url).set(order_id, "orderId", ex=60)
    late = s.stock.put(f"/reduceStock/{order_id}", json=[{"goodsId": goods, "goodsNum": 1}])
    assert (late.status_code, late.json["outcome"]) == (409, "voided")
    assert s.level(goods) == 5 and rows(s, stock_flow, order_id) == []


def test_a_deduction_held_up_before_its_lock_is_refused_once_the_order_was_cancelled(
    services: Services,
) -> None:
    """Suspension, made deterministic with a fault point: the order's deduction has passed
    the pre-filter and stops before the lock; meanwhile the buyer cancels. When it goes on,
    it is refused, and the genOrder request answers what the row says: CANCELLED."""
    s = services
    goods = unique()
    s.seed(goods, 5)
    cancels: list[Any] = []
    store = s.order_app.extensions["orders"].store

    def cancel_meanwhile() -> None:
        [order] = [o for o in _pending(store) if goods in o.lines]
        cancels.append(s.order_app.test_client().post(f"/orders/{order.id}/cancel"))

    s.stock_app.extensions["stock"].deduction.faults = PauseAt(
        "delay_before_deduct", cancel_meanwhile
    )
    answer = place(s, {goods: 1})
    assert cancels and cancels[0].json["status"] == "CANCELLED"
    assert (answer.status_code, answer.json["status"]) == (409, "CANCELLED"), answer.json
    assert s.level(goods) == 5
    assert rows(s, stock_flow, answer.json["orderId"]) == []


def _pending(store: Any) -> list[Any]:
    """Every PENDING and CANCELLING order, page after page: the database is the worker's, and
    the tests it ran before may have left more than a page of them, oldest first (one page of
    50 missed this test's own order in full runs)."""
    from datetime import UTC, datetime

    later = datetime.now(UTC).replace(tzinfo=None) + timedelta(minutes=1)
    found: list[Any] = []
    for status in ("PENDING", "CANCELLING"):
        after = None
        while page := store.page(status, later, after, 200):
            found += page
            after = (page[-1].created_at, page[-1].id)
    return found


def test_a_failed_order_has_nothing_to_cancel_and_an_unknown_one_is_404(
    services: Services,
) -> None:
    s = services
    goods = unique()
    s.seed(goods, 0)
    refused = place(s, {goods: 1}).json
    answer = s.order.post(f"/orders/{refused['orderId']}/cancel")
    assert (answer.status_code, answer.json["status"]) == (409, "FAILED")
    assert s.order.post(f"/orders/{unique('o')}/cancel").status_code == 404


def test_cancels_racing_their_orders_deductions_return_exactly_what_was_deducted(
    services: Services,
) -> None:
    """Twelve orders placed while their cancels are sent: whichever lands first, each order
    ends CANCELLED with returns equal to its flows (both empty when the cancel came first),
    and the level is back where it started."""
    s = services
    goods = unique()
    s.seed(goods, 50)
    store = s.order_app.extensions["orders"].store
    keys = [unique("key") for _ in range(12)]
    start = threading.Barrier(2 * len(keys))

    def buy(key: str) -> Any:
        client = s.order_app.test_client()
        start.wait()
        body = {"userId": f"u-{key}", "items": [{"goodsId": goods, "num": 1}]}
        return client.post("/genOrder", json=body, headers={"Idempotency-Key": key}).json

    def cancel(key: str) -> None:
        client = s.order_app.test_client()
        start.wait()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # until the order row exists, then cancel it
            order = store.by_idempotency_key(key)
            if order is not None:
                client.post(f"/orders/{order.id}/cancel")
                return
            time.sleep(0.005)
        raise AssertionError(f"order {key} never appeared")

    with ThreadPoolExecutor(2 * len(keys)) as pool:
        bought = [pool.submit(buy, k) for k in keys]
        cancelled = [pool.submit(cancel, k) for k in keys]
        for future in cancelled + bought:
            future.result(60)
    for key in keys:
        order = store.by_idempotency_key(key)
        assert order is not None and order.status == "CANCELLED", order
        assert rows(s, stock_return, order.id) == rows(s, stock_flow, order.id)
    assert s.level(goods) == 50


def test_a_hold_paid_in_time_is_confirmed_and_a_repeat_pay_answers_the_same(
    services: Services,
) -> None:
    s = services
    goods = unique()
    s.seed(goods, 5)
    held = place(s, {goods: 2}, payWithinSeconds=60)
    assert (held.status_code, held.json["status"]) == (200, "AWAITING_PAYMENT"), held.json
    assert held.json["payBy"] and s.level(goods) == 3
    paid = s.order.post(f"/orders/{held.json['orderId']}/pay")
    assert (paid.status_code, paid.json["status"]) == (200, "CONFIRMED")
    again = s.order.post(f"/orders/{held.json['orderId']}/pay")
    assert (again.status_code, again.json["status"]) == (200, "CONFIRMED")
    plain = place(s, {goods: 1}).json
    not_held = s.order.post(f"/orders/{plain['orderId']}/pay")
    assert not_held.status_code == 409 and "awaits no payment" in not_held.json["error"]


def expire_now(s: Services, order_id: str, shift: timedelta = timedelta(0)) -> None:
    """The hold's deadline moved to now (and `shift`), as if its time had run out."""
    from order_service.storage.tables import orders
    from shared.database.engines import utcnow

    deadline = utcnow() + shift
    with s.engine.begin() as conn:
        conn.execute(sa.update(orders).where(orders.c.id == order_id).values(pay_deadline=deadline))


def run_reconciler(s: Services) -> Any:
    transport = httpx.WSGITransport(app=s.stock_app)
    with StockClient("http://stock", CallPolicy(5, 0, 10, 0), transport=transport) as stock:
        return reconcile(s.order_app.extensions["orders"].store, stock, timedelta(seconds=0))


def test_an_unpaid_hold_is_cancelled_by_the_reconciler_and_a_late_pay_is_refused(
    services: Services,
) -> None:
    s = services
    goods = unique()
    s.seed(goods, 5)
    held = place(s, {goods: 2}, payWithinSeconds=600).json
    order_id = held["orderId"]
    expire_now(s, order_id)
    report = run_reconciler(s)
    assert order_id in report.cancelled
    row = s.order.get(f"/orders/{order_id}").json
    assert row["status"] == "CANCELLED" and "expired" in row["reason"]
    assert s.level(goods) == 5
    late = s.order.post(f"/orders/{order_id}/pay")
    assert (late.status_code, late.json["status"]) == (409, "CANCELLED")


def test_a_pay_after_the_deadline_loses_to_the_expiry_and_says_so(services: Services) -> None:
    s = services
    goods = unique()
    s.seed(goods, 5)
    order_id = place(s, {goods: 1}, payWithinSeconds=600).json["orderId"]
    expire_now(s, order_id)
    late = s.order.post(f"/orders/{order_id}/pay")  # it expires the hold itself
    assert (late.status_code, late.json["status"]) == (409, "CANCELLED"), late.json
    assert late.json["error"] == "the hold expired" and s.level(goods) == 5


def test_pay_and_expiry_racing_at_the_deadline_exactly_one_wins(services: Services) -> None:
    """Twenty holds at their deadline, each paid and expired at the same time: each ends
    CONFIRMED with no return (the pay won: answered 200) or CANCELLED with its stock back
    (the expiry won: the pay answered 409), never both, never neither."""
    s = services
    goods = unique()
    s.seed(goods, 40)
    cancellation = s.order_app.extensions["orders"].cancellation
    ids = [place(s, {goods: 1}, payWithinSeconds=600).json["orderId"] for _ in range(20)]
    start = threading.Barrier(2)

    def pay(order_id: str) -> int:
        start.wait()
        return int(s.order_app.test_client().post(f"/orders/{order_id}/pay").status_code)

    def expire(order_id: str) -> None:
        start.wait()
        cancellation.expire(order_id)

    outcomes = []
    for i, order_id in enumerate(ids):
        # The deadline a few milliseconds either side of the race, so either may win.
        expire_now(s, order_id, timedelta(milliseconds=(i % 5 - 2) * 3))
        with ThreadPoolExecutor(2) as pool:
            paid = pool.submit(pay, order_id)
            pool.submit(expire, order_id).result(30)
            code = paid.result(30)
        status = s.order.get(f"/orders/{order_id}").json["status"]
        returned = rows(s, stock_return, order_id)
        if code == 200:
            assert status == "CONFIRMED" and returned == [], (order_id, status, returned)
        else:
            assert status == "CANCELLED" and returned == [(goods, 1)], (order_id, status)
        outcomes.append(status)
    print(f"pay won {outcomes.count('CONFIRMED')}, expiry won {outcomes.count('CANCELLED')}")
    confirmed = sum(s.order.get(f"/orders/{o}").json["status"] == "CONFIRMED" for o in ids)
    assert s.level(goods) == 40 - confirmed


def test_a_cancel_the_stock_service_did_not_answer_is_finished_by_the_reconciler(
    settings: Settings,
) -> None:
    class NoReturns(httpx.BaseTransport):
        def __init__(self, inner: httpx.BaseTransport) -> None:
            self.inner = inner

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            if request.url.path.startswith("/returnStock"):
                raise httpx.ConnectError("cut", request=request)
            return self.inner.handle_request(request)

    with running_services(settings, wrap_transport=NoReturns) as s:
        goods = unique()
        s.seed(goods, 5)
        order_id = place(s, {goods: 3}).json["orderId"]
        answer = s.order.post(f"/orders/{order_id}/cancel")
        assert (answer.status_code, answer.json["status"]) == (503, "CANCELLING"), answer.json
        assert s.level(goods) == 2
        report = run_reconciler(s)
        assert order_id in report.cancelled
        assert s.order.get(f"/orders/{order_id}").json["status"] == "CANCELLED"
        assert s.level(goods) == 5
