"""Every answer holds when stock comes back: a refusal, a cancel sent before its
order, a pay repeated, a hold's deadline, a cancel racing a rejected order. Real ZooKeeper,
Redis and each SQL database; the interleavings are played through the services' own hooks
(the fault points, the stock transport) so each is the same on every run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

import httpx
import pytest
import redis as redis_lib
import sqlalchemy as sa

from order_service.storage.tables import orders
from shared.config.settings import Settings
from stock_service.storage.tables import flag_decision
from tests.conftest import unique
from tests.helpers import PauseAt, Services, running_services


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings) as s:
        yield s


def place(s: Services, lines: dict[str, int], key: str | None = None, **extra: Any) -> Any:
    items = [{"goodsId": g, "num": n} for g, n in lines.items()]
    headers = {"Idempotency-Key": key} if key else {}
    body = {"userId": unique("u"), "items": items, **extra}
    return s.order_app.test_client().post("/genOrder", json=body, headers=headers)


def flows_of(s: Services, flag: str) -> list[tuple[str, int]]:
    return sorted((f["goods_id"], f["num"]) for f in s.flows(flag=flag))


def decision_of(s: Services, flag: str) -> str | None:
    with s.engine.connect() as conn:
        return conn.execute(
            sa.select(flag_decision.c.outcome).where(flag_decision.c.flag == flag)
        ).scalar_one_or_none()


class FirstAttemptTimesOut(httpx.BaseTransport):
    """Once armed, the order service's next reduceStock runs on in a thread of its own (as a
    slow worker would), while the caller is told ReadTimeout after `patience` seconds: the
    order service retries with the same flag, and the first attempt carries on meanwhile."""

    def __init__(self, inner: httpx.BaseTransport, patience: float = 0.5) -> None:
        self.inner = inner
        self.patience = patience
        self.armed = False
        self.late: list[threading.Thread] = []
        self.late_answers: list[httpx.Response] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if not request.url.path.startswith("/reduceStock/") or not self.armed:
            return self.inner.handle_request(request)
        self.armed = False
        request.read()

        def run() -> None:
            response = self.inner.handle_request(request)
            response.read()
            self.late_answers.append(response)

        thread = threading.Thread(target=run, daemon=True)
        self.late.append(thread)
        thread.start()
        thread.join(self.patience)
        raise httpx.ReadTimeout("the first attempt is slow", request=request)


def test_a_buyer_told_no_is_never_sold_to_when_stock_comes_back(settings: Settings) -> None:
    """The late first attempt after a refusal. G has 1 unit; X buys it. O's first attempt
    passes the flag check and is held before the lock; the order service times out, retries
    with the same flag, the retry is refused (G is 0) and O is answered 409. Then X is
    cancelled: its unit comes back. Then O's first attempt goes on: it must not deduct (the
    refusal was a decision), or the buyer told no has been sold to, and the unit is lost to
    everyone."""
    with running_services(settings, wrap_transport=FirstAttemptTimesOut) as s:
        goods = unique()
        s.seed(goods, 1)
        x = place(s, {goods: 1})
        assert (x.status_code, x.json["status"]) == (200, "CONFIRMED"), x.json
        go_on = threading.Event()
        held = threading.Event()

        def hold_first_attempt() -> None:
            held.set()
            assert go_on.wait(30), "the test never let the first attempt go on"

        s.stock_app.extensions["stock"].deduction.faults = PauseAt(
            "delay_before_deduct", hold_first_attempt
        )
        transport = s.order_app.extensions["orders"].stock.http._transport
        transport.armed = True
        o = place(s, {goods: 1})
        assert held.is_set(), "the first attempt never reached the fault point"
        assert (o.status_code, o.json["status"]) == (409, "FAILED"), o.json
        assert o.json["reason"].startswith("insufficient_stock")
        cancelled = s.order.post(f"/orders/{x.json['orderId']}/cancel")
        assert (cancelled.status_code, cancelled.json["status"]) == (200, "CANCELLED")
        assert s.level(goods) == 1
        go_on.set()
        for late in transport.late:
            late.join(30)
        [late_answer] = transport.late_answers
        assert late_answer.status_code == 409, late_answer.json()
        assert late_answer.json()["outcome"] == "insufficient"
        order_id = o.json["orderId"]
        assert flows_of(s, order_id) == [], "the refused order was deducted after all"
        assert s.level(goods) == 1, "the returned unit is gone"
        assert s.order.get(f"/orders/{order_id}").json["status"] == "FAILED"
        assert decision_of(s, order_id) == "refused"


def test_a_refusal_is_recorded_so_a_retry_of_the_flag_is_refused_too(
    services: Services,
) -> None:
    """The refusal's record, seen from the stock service alone: once a flag was refused, no
    attempt of it deducts, whatever came back to the shelf, and it is told so from the
    database when its flag is no longer in Redis."""
    s = services
    goods = unique()
    s.seed(goods, 0)
    flag = unique("f")
    flags = redis_lib.Redis.from_url(s.settings.redis_url)
    flags.set(flag, "orderId", ex=60)
    body = [{"goodsId": goods, "goodsNum": 1}]
    refused = s.stock.put(f"/reduceStock/{flag}", json=body)
    assert (refused.status_code, refused.json["outcome"]) == (409, "insufficient")
    s.seed(goods, 5)  # restocked
    again = s.stock.put(f"/reduceStock/{flag}", json=body)  # not in Redis: from the database
    assert (again.status_code, again.json["outcome"]) == (409, "insufficient"), again.json
    flags.set(flag, "orderId", ex=60)  # live again (a flag written again): under the lock
    live = s.stock.put(f"/reduceStock/{flag}", json=body)
    assert (live.status_code, live.json["outcome"]) == (409, "insufficient"), live.json
    assert flows_of(s, flag) == [] and s.level(goods) == 5
    voided = s.stock.put(f"/voidFlag/{flag}").json
    assert voided["outcome"] == "refused" and voided["flows"] == []


def test_a_cancel_by_key_before_its_order_leaves_a_tombstone(services: Services) -> None:
    """Case 2: a buyer whose page timed out cancels by Idempotency-Key before the order's
    request has reached the order service. The cancel is announced (200 CANCELLED), and the
    genOrder that comes afterwards under that key is refused, 409 CANCELLED, deducting
    nothing; asked again, the key keeps answering the same order."""
    s = services
    goods = unique()
    s.seed(goods, 3)
    key = unique("key")
    cancel = s.order.post("/cancelOrder", headers={"Idempotency-Key": key})
    assert (cancel.status_code, cancel.json["status"]) == (200, "CANCELLED"), cancel.json
    late = place(s, {goods: 1}, key=key)
    assert (late.status_code, late.json["status"]) == (409, "CANCELLED"), late.json
    assert late.json["orderId"] == cancel.json["orderId"]
    assert s.level(goods) == 3 and flows_of(s, late.json["orderId"]) == []
    again = s.order.post("/cancelOrder", headers={"Idempotency-Key": key})
    assert (again.status_code, again.json["orderId"]) == (200, cancel.json["orderId"])


def test_cancels_by_key_racing_their_orders_are_never_contradicted(services: Services) -> None:
    """Case 2 raced: twenty genOrders, each with its cancel by key sent at the same moment.
    Whichever lands first, the cancel is answered CANCELLED, the order ends CANCELLED, and the
    level is back where it started."""
    s = services
    goods = unique()
    s.seed(goods, 40)
    keys = [unique("key") for _ in range(20)]
    start = threading.Barrier(2 * len(keys))

    def buy(key: str) -> Any:
        start.wait()
        return place(s, {goods: 1}, key=key)

    def cancel(key: str) -> Any:
        start.wait()
        return s.order_app.test_client().post("/cancelOrder", headers={"Idempotency-Key": key})

    with ThreadPoolExecutor(2 * len(keys)) as pool:
        bought = [pool.submit(buy, k) for k in keys]
        cancelled = [pool.submit(cancel, k) for k in keys]
        answers = [(b.result(60), c.result(60)) for b, c in zip(bought, cancelled, strict=True)]
    store = s.order_app.extensions["orders"].store
    for key, (_bought, cancel_answer) in zip(keys, answers, strict=True):
        order = store.by_idempotency_key(key)
        assert cancel_answer.status_code in (200, 503), (key, cancel_answer.json)
        assert cancel_answer.json["status"] in ("CANCELLED", "CANCELLING"), cancel_answer.json
        assert order is not None and order.status == "CANCELLED", (key, order)
    assert s.level(goods) == 40


class ThenMeanwhile:
    """A store that runs `meanwhile` once, before its first write transaction begins: another
    request's whole step played between what this request read and its write."""

    def __init__(self, store: Any, meanwhile: Callable[[], object]) -> None:
        self.store = store
        self.meanwhile: Callable[[], object] | None = meanwhile

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def writing(self) -> Any:
        if self.meanwhile is not None:
            action, self.meanwhile = self.meanwhile, None
            action()
        return self.store.writing()


def test_a_double_click_on_pay_answers_both_clicks_paid(services: Services) -> None:
    """Case 3: two pays of one hold; the second's compare-and-set loses to the first, which
    paid it after the second began (and read the order). Both are answered 200 CONFIRMED."""
    s = services
    goods = unique()
    s.seed(goods, 2)
    held = place(s, {goods: 1}, payWithinSeconds=600).json
    order_id = held["orderId"]
    cancellation = s.order_app.extensions["orders"].cancellation
    other: list[Any] = []
    real_store = cancellation.store
    cancellation.store = ThenMeanwhile(
        real_store, lambda: other.append(s.order_app.test_client().post(f"/orders/{order_id}/pay"))
    )
    try:
        second = s.order.post(f"/orders/{order_id}/pay")
    finally:
        cancellation.store = real_store
    assert (other[0].status_code, other[0].json["status"]) == (200, "CONFIRMED")
    assert (second.status_code, second.json["status"]) == (200, "CONFIRMED"), second.json


def test_pay_of_an_expired_or_cancelled_hold_says_which(services: Services) -> None:
    s = services
    goods = unique()
    s.seed(goods, 4)
    cancelled = place(s, {goods: 1}, payWithinSeconds=600).json["orderId"]
    s.order.post(f"/orders/{cancelled}/cancel")
    answer = s.order.post(f"/orders/{cancelled}/pay")
    assert (answer.status_code, answer.json["refused"]) == (409, "cancelled"), answer.json
    expired = place(s, {goods: 1}, payWithinSeconds=600).json["orderId"]
    with s.engine.begin() as conn:
        conn.execute(
            sa.update(orders)
            .where(orders.c.id == expired)
            .values(pay_deadline=datetime(2000, 1, 1))
        )
    answer = s.order.post(f"/orders/{expired}/pay")
    assert (answer.status_code, answer.json["refused"]) == (409, "expired"), answer.json


def test_a_hold_s_clock_starts_when_its_deduction_is_confirmed(services: Services) -> None:
    """Case 5: a hold of 2 s whose deduction took 3 s is answered with a deadline still ahead,
    and can be paid."""
    s = services
    goods = unique()
    s.seed(goods, 2)
    s.stock_app.extensions["stock"].deduction.faults = PauseAt(
        "delay_before_deduct", lambda: time.sleep(3)
    )
    held = place(s, {goods: 1}, payWithinSeconds=2)
    assert (held.status_code, held.json["status"]) == (200, "AWAITING_PAYMENT"), held.json
    pay_by = datetime.fromisoformat(held.json["payBy"])
    from shared.database.engines import utcnow

    assert pay_by > utcnow(), f"payBy {pay_by} had passed when the answer came"
    paid = s.order.post(f"/orders/{held.json['orderId']}/pay")
    assert (paid.status_code, paid.json["status"]) == (200, "CONFIRMED"), paid.json


def test_the_deadline_stored_is_the_deadline_shown_to_the_microsecond(services: Services) -> None:
    """Case 6: MySQL/MariaDB kept DATETIME to the second, so a pay inside the deadline shown
    could be refused. Every database keeps the deadline as shown."""
    s = services
    goods = unique()
    s.seed(goods, 1)
    held = place(s, {goods: 1}, payWithinSeconds=60).json
    with s.engine.connect() as conn:
        stored = conn.execute(
            sa.select(orders.c.pay_deadline).where(orders.c.id == held["orderId"])
        ).scalar_one()
    assert stored == datetime.fromisoformat(held["payBy"]), (stored, held["payBy"])


class RejectAfterCancel(httpx.BaseTransport):
    """Case 7's interleaving: the order's reduceStock waits until a cancel of the same order
    has moved it to CANCELLING and is calling returnStock; the reduceStock is then rejected
    (unknown goods), and only after that does the returnStock go on."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.pending = threading.Event()  # the order row exists, its reduceStock waits
        self.returning = threading.Event()  # the cancel is at returnStock
        self.rejected = threading.Event()  # the reduceStock was answered

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path.startswith("/reduceStock/"):
            self.pending.set()
            assert self.returning.wait(30), "the cancel never reached returnStock"
            try:
                return self.inner.handle_request(request)
            finally:
                self.rejected.set()
        if path.startswith("/returnStock/"):
            self.returning.set()
            assert self.rejected.wait(30), "the reduceStock was never answered"
        return self.inner.handle_request(request)


def test_a_cancel_racing_a_rejected_order_is_answered_without_a_500(settings: Settings) -> None:
    """Case 7: a cancel of a PENDING order whose stock call is then rejected for unknown
    goods: the cancel gets an answer (no 500), the genOrder is refused 422, and nothing is
    deducted."""
    with running_services(settings, wrap_transport=RejectAfterCancel) as s:
        transport = s.order_app.extensions["orders"].stock.http._transport
        unknown = unique("nowhere")
        with ThreadPoolExecutor(2) as pool:
            bought = pool.submit(place, s, {unknown: 1})
            assert transport.pending.wait(30)
            [order] = [o for o in _pending_orders(s) if unknown in o.lines]
            cancel = pool.submit(
                lambda: s.order_app.test_client().post(f"/orders/{order.id}/cancel")
            )
            cancel_answer, gen_answer = cancel.result(60), bought.result(60)
        assert gen_answer.status_code == 422, gen_answer.json
        assert cancel_answer.status_code in (200, 404), cancel_answer.json
        assert flows_of(s, order.id) == []


def _pending_orders(s: Services) -> list[Any]:
    from datetime import timedelta

    from shared.database.engines import utcnow

    store = s.order_app.extensions["orders"].store
    return list(store.page("PENDING", utcnow() + timedelta(minutes=1), None, 100))


def test_the_reconciler_fence_can_be_moved_on_to_a_new_epoch(services: Services) -> None:
    """Case 8: the lock service was rebuilt (its tokens start again from small numbers) while
    the order database was kept: the fence holds a token far above any new leader's. With the
    epoch raised (RECONCILER_EPOCH), the new leader's writes go through; an old epoch's are
    refused."""
    from datetime import timedelta

    from order_service.placing.client import StockClient
    from order_service.placing.retry import CallPolicy
    from order_service.settling.reconcile import reconcile
    from order_service.storage import transitions
    from order_service.storage.tables import reconciler_fence

    s = services
    store = s.order_app.extensions["orders"].store
    with s.engine.connect() as conn:
        before = conn.execute(sa.select(reconciler_fence)).mappings().one()
    try:
        with s.engine.begin() as conn:  # the old lock service's leaders wrote up to here
            conn.execute(sa.update(reconciler_fence).values(epoch=0, token=10**9))
        order_id = unique("o")
        transitions.create_pending(store, order_id, unique("u"), {unique(): 1}, None, None)
        transport = httpx.WSGITransport(app=s.stock_app)
        with StockClient("http://stock", CallPolicy(5, 0, 10, 0), transport=transport) as stock:
            with pytest.raises(transitions.Superseded):
                reconcile(store, stock, timedelta(0), fence=transitions.Fence(0, 7))
            report = reconcile(store, stock, timedelta(0), fence=transitions.Fence(1, 7))
            assert order_id in report.failed
            another = unique("o")
            transitions.create_pending(store, another, unique("u"), {unique(): 1}, None, None)
            with pytest.raises(transitions.Superseded):  # the old epoch is over for good
                reconcile(store, stock, timedelta(0), fence=transitions.Fence(0, 10**9 + 1))
    finally:  # the other tests' reconcilers lead in epoch 0
        with s.engine.begin() as conn:
            conn.execute(sa.update(reconciler_fence).values(**before))


def test_the_api_document_says_a_repeated_key_answers_the_order_s_current_state(
    services: Services,
) -> None:
    """Case 9: a repeat of a key tells the buyer the truth now (200 first, 409 CANCELLED after
    a cancel), and the document says so."""
    s = services
    goods = unique()
    s.seed(goods, 2)
    key = {"Idempotency-Key": unique("key")}
    body = {"userId": unique("u"), "items": [{"goodsId": goods, "num": 1}]}
    first = s.order.post("/genOrder", json=body, headers=key)
    assert (first.status_code, first.json["status"]) == (200, "CONFIRMED")
    s.order.post(f"/orders/{first.json['orderId']}/cancel")
    repeat = s.order.post("/genOrder", json=body, headers=key)
    assert (repeat.status_code, repeat.json["status"]) == (409, "CANCELLED"), repeat.json
    assert repeat.headers["Idempotent-Replayed"] == "true" and s.level(goods) == 2
    document = s.order.get("/openapi.json").json
    [header] = [
        p
        for p in document["paths"]["/genOrder"]["post"]["parameters"]
        if p["name"] == "Idempotency-Key"
    ]
    assert "current state" in header["schema"]["description"], header


class SlowDeductions(PauseAt):
    """Every deduction waits `seconds` before its lock, as a loaded stock service would."""

    def __init__(self, seconds: float) -> None:
        super().__init__("delay_before_deduct", lambda: None)
        self.seconds = seconds

    def fire(self, point: str) -> None:
        if point == self.point:
            time.sleep(self.seconds)


def lost_sales_with_a_reconciler(s: Services, older_than: float, orders: int = 8) -> int:
    """Orders placed (each deduction slowed 1 s) while a reconciler passes every 0.1 s over
    the PENDING orders older than `older_than`: how many ended FAILED with their stock still
    on the shelf."""
    from datetime import timedelta

    from order_service.placing.client import StockClient
    from order_service.placing.retry import CallPolicy
    from order_service.settling.reconcile import reconcile

    goods = unique()
    s.seed(goods, orders)
    s.stock_app.extensions["stock"].deduction.faults = SlowDeductions(1.0)
    stop = threading.Event()
    store = s.order_app.extensions["orders"].store

    def passes() -> None:
        transport = httpx.WSGITransport(app=s.stock_app)
        with StockClient("http://stock", CallPolicy(5, 0, 10, 0), transport=transport) as stock:
            while not stop.wait(0.1):
                reconcile(store, stock, timedelta(seconds=older_than))

    reconciler = threading.Thread(target=passes)
    reconciler.start()
    try:
        with ThreadPoolExecutor(orders) as pool:
            answers = list(pool.map(lambda _: place(s, {goods: 1}), range(orders)))
    finally:
        stop.set()
        reconciler.join(30)
    failed = sum(a.json["status"] == "FAILED" for a in answers)
    return failed if s.level(goods) >= failed else -1


def test_the_reconciler_rule_loses_no_sale_that_racing_requests_would(
    services: Services,
) -> None:
    """Case 4, measured: a reconciler that takes orders younger than a request's budget (0 s,
    which the settings accepted before) voids orders whose request is at work, and those
    sales are lost; at the budget the settings now require, none is."""
    s = services
    before = lost_sales_with_a_reconciler(s, older_than=0)
    after = lost_sales_with_a_reconciler(s, older_than=s.settings.reconcile_age())
    print(f"lost sales of 8 orders: reconciler at 0 s {before}, at the request budget {after}")
    assert before > 0 and after == 0
