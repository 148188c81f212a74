"""One item never stops a reconciler's pass (order_service/settling/pages.py): an item whose
handling raises is logged, counted and skipped, and the items behind it are served in the same
pass; a row locked by a transaction left open (a paused worker) costs the pass about
DB_LOCK_TIMEOUT_MS, not the pause; the paid holds' releases are read page after page.

The failing item is the oldest of its kind, so a pass that stops at it serves nothing behind
it (before, every pass did): either the stock service's answer to its call is a page no client
can read (a proxy's error page), or its order row is held by another open transaction. Real
SQLite, PostgreSQL and MariaDB; the row lock on PostgreSQL and MariaDB alone (SQLite has no row
locks: its one writer waits in the busy timeout)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from prometheus_client import REGISTRY

from order_service.placing.client import StockClient
from order_service.placing.retry import CallPolicy
from order_service.reservations.store import ReservationStore
from order_service.settling import reconciler
from order_service.settling.reconcile import ReconcileReport, reconcile
from order_service.storage import transitions
from order_service.storage.tables import hold_release, orders, reservations
from shared.config.settings import Settings
from tests.conftest import ADMIN, unique
from tests.helpers import Services, running_services
from tests.integration.test_reconcile import pending_order


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings) as s:
        yield s


class Unreadable(httpx.BaseTransport):
    """The stock service, except that a call naming one of `ids` is answered 200 with an HTML
    page: reading its JSON raises in the pass."""

    def __init__(self, inner: httpx.BaseTransport, ids: set[str]) -> None:
        self.inner, self.ids = inner, ids

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if any(i in request.url.path for i in self.ids):
            return httpx.Response(200, text="<html>maintenance</html>")
        return self.inner.handle_request(request)


def a_pass(s: Services, unreadable: set[str], **kwargs: Any) -> ReconcileReport:
    transport = Unreadable(httpx.WSGITransport(app=s.stock_app), unreadable)
    with StockClient("http://stock", CallPolicy(5, 0, 10, 0), transport=transport) as stock:
        store = kwargs.pop("store", s.order_app.extensions["orders"].store)
        return reconcile(store, stock, timedelta(0), **kwargs)


def failures(name: str, reason: str) -> float:
    labels = {"pass": name, "reason": reason}
    return REGISTRY.get_sample_value("reconcile_item_failures_total", labels) or 0.0


def status(s: Services, order_id: str) -> str:
    return str(json_of(s.order.get(f"/orders/{order_id}"))["status"])


def json_of(answer: Any) -> dict[str, Any]:
    assert isinstance(answer.json, dict), answer.data
    return answer.json


def place(s: Services, goods: str, **extra: Any) -> str:
    body = {"userId": unique("u"), "items": [{"goodsId": goods, "num": 1}], **extra}
    answer = s.order.post("/genOrder", json=body)
    assert answer.status_code == 200, answer.json
    return str(json_of(answer)["orderId"])


def set_order(s: Services, order_id: str, **values: Any) -> None:
    with s.engine.begin() as conn:
        conn.execute(sa.update(orders).where(orders.c.id == order_id).values(**values))


def ago(**delta: float) -> datetime:
    return datetime.now(UTC).replace(tzinfo=None) - timedelta(**delta)


def cancelling(s: Services, goods: str) -> str:
    """A confirmed order whose cancel's return got no answer."""
    order_id = place(s, goods)
    store = s.order_app.extensions["orders"].store
    moved, _ = transitions.move(store, order_id, ("CONFIRMED",), "CANCELLING", "cancelled", None)
    assert moved
    return order_id


def unpaid(s: Services, goods: str) -> str:
    """A hold past its pay deadline."""
    order_id = place(s, goods, payWithinSeconds=600)
    set_order(s, order_id, pay_deadline=ago(hours=1))
    return order_id


MAKE = {
    "pending": (lambda s, goods: pending_order(s, {goods: 1}), "FAILED"),
    "cancelling": (cancelling, "CANCELLED"),
    "awaiting_payment": (unpaid, "CANCELLED"),
}


@pytest.mark.parametrize("kind", sorted(MAKE))
def test_an_order_whose_handling_raises_is_skipped_and_the_ones_behind_it_are_served(
    services: Services, kind: str
) -> None:
    s = services
    goods = unique()
    s.seed(goods, 10)
    make, served_as = MAKE[kind]
    first = make(s, goods)
    set_order(s, first, created_at=ago(days=30))  # the oldest of its kind: first in the pass
    if kind == "awaiting_payment":
        set_order(s, first, pay_deadline=ago(days=30))
    behind = [make(s, goods) for _ in range(2)]
    before = failures(kind, "JSONDecodeError")
    report = a_pass(s, {first}, page_size=1)
    assert [status(s, o) for o in behind] == [served_as, served_as]
    assert first in report.skipped and failures(kind, "JSONDecodeError") == before + 1
    assert status(s, first) != served_as
    a_pass(s, set(), page_size=1)  # its answer readable again: served by the next pass
    assert status(s, first) == served_as


def test_a_backorder_whose_handling_raises_is_skipped_and_the_ones_behind_it_are_confirmed(
    services: Services,
) -> None:
    s = services
    goods = unique()
    s.seed(goods, 0)
    answer = s.stock.put(f"/stock/{goods}/policy", json={"backorderLimit": 5}, headers=ADMIN)
    assert answer.status_code == 200, answer.json
    ids = [place(s, goods, fill="backorder") for _ in range(3)]
    assert {status(s, o) for o in ids} == {"BACKORDERED"}
    made = s.stock.post(
        f"/stock/{goods}/adjustments", json={"delta": 3, "reason": "restock"}, headers=ADMIN
    )
    assert made.status_code == 201, made.json
    set_order(s, ids[0], created_at=ago(days=30))
    before = failures("backordered", "JSONDecodeError")
    report = a_pass(s, {ids[0]}, page_size=1)
    assert set(ids[1:]) <= set(report.backorders.confirmed)
    assert [status(s, o) for o in ids] == ["BACKORDERED", "CONFIRMED", "CONFIRMED"]
    assert ids[0] in report.backorders.skipped
    assert failures("backordered", "JSONDecodeError") == before + 1
    assert ids[0] in a_pass(s, set()).backorders.confirmed


def test_a_reservation_whose_handling_raises_is_skipped_and_the_ones_behind_it_expire(
    services: Services,
) -> None:
    s = services
    goods = unique()
    s.seed(goods, 10)
    ids = []
    for _ in range(3):
        body = {"items": [{"goodsId": goods, "num": 2}], "ttlSeconds": 600}
        answer = s.order.post("/reservations", json=body)
        assert answer.status_code == 201, answer.json
        ids.append(str(json_of(answer)["reservationId"]))
    with s.engine.begin() as conn:
        for rid, days in zip(ids, (30, 2, 1), strict=True):
            stamp = ago(days=days)
            query = sa.update(reservations).where(reservations.c.id == rid)
            conn.execute(query.values(expires_at=stamp))
    before = failures("reservations_held", "JSONDecodeError")
    report = a_pass(s, {ids[0]}, page_size=1)
    assert set(ids[1:]) <= set(report.reservations.expired) & set(report.reservations.returned)
    assert ids[0] in report.reservations.skipped
    assert failures("reservations_held", "JSONDecodeError") == before + 1
    assert json_of(s.stock.get(f"/stock/{goods}"))["held"] == 2  # the skipped one's units alone


def test_every_page_of_the_paid_holds_releases_is_read_in_one_pass(services: Services) -> None:
    s = services
    goods = unique()
    s.seed(goods, 10)
    paid = []
    for _ in range(5):
        order_id = place(s, goods, payWithinSeconds=600)
        assert s.order.post(f"/orders/{order_id}/pay").status_code == 200
        paid.append(order_id)
    with s.engine.begin() as conn:  # their releases' answers lost: left to the reconciler
        rows = [{"order_id": o, "created_at": ago(minutes=10)} for o in paid]
        conn.execute(sa.insert(hold_release), rows)
    report = a_pass(s, set(), page_size=2)
    assert set(paid) <= set(report.released)
    with s.engine.connect() as conn:
        left = conn.execute(
            sa.select(hold_release.c.order_id).where(hold_release.c.order_id.in_(paid))
        )
        assert not list(left)


LOCK_MS = 1000


@pytest.fixture
def timed_store(settings: Settings) -> Iterator[Any]:
    """The order store as the reconciler program builds it, configured by its environment
    with DB_LOCK_TIMEOUT_MS."""
    environment = {"DB_LOCK_TIMEOUT_MS": str(LOCK_MS)}
    configured = Settings.from_env(
        environment,
        "reconciler",
        order_database_url=settings.order_database_url,
        redis_url=settings.redis_url,
    )
    parts = reconciler.Parts.of(configured, "reconciler")
    yield parts.store
    parts.close()


@pytest.mark.parametrize("database_url", ["postgresql", "mysql"], indirect=True)
def test_a_row_locked_by_an_open_transaction_costs_the_pass_its_lock_timeout_not_the_pause(
    services: Services, timed_store: Any
) -> None:
    s = services
    goods = unique()
    s.seed(goods, 10)
    ids = [pending_order(s, {goods: 1}, age=timedelta(days=d)) for d in (30, 2, 1)]
    holder = s.engine.connect()
    held = holder.begin()
    holder.execute(sa.select(orders.c.id).where(orders.c.id == ids[0]).with_for_update())
    result: list[ReconcileReport] = []
    before = failures("pending", "lock_timeout")
    started = time.monotonic()
    worker = threading.Thread(target=lambda: result.append(a_pass(s, set(), store=timed_store)))
    worker.start()
    try:
        worker.join(LOCK_MS / 1000 + 10)
        took = time.monotonic() - started
        assert not worker.is_alive(), f"the pass still waits for the locked row after {took:.1f} s"
    finally:
        held.rollback()  # the paused worker ends
        holder.close()
        worker.join(30)
    assert took < LOCK_MS / 1000 + 5, took
    assert [status(s, o) for o in ids] == ["PENDING", "FAILED", "FAILED"]
    assert ids[0] in result[0].skipped and failures("pending", "lock_timeout") == before + 1
    a_pass(s, set(), store=timed_store)
    assert status(s, ids[0]) == "FAILED"


def test_a_kind_whose_listing_fails_leaves_the_kinds_after_it_served(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The BACKORDERED listing fails (a row it cannot read, a page past the statement timeout:
    here an injected error); the reservations and releases after it are served all the same."""
    s = services
    goods = unique()
    s.seed(goods, 10)
    answer = s.order.post(
        "/reservations", json={"items": [{"goodsId": goods, "num": 2}], "ttlSeconds": 600}
    )
    assert answer.status_code == 201, answer.json
    rid = str(json_of(answer)["reservationId"])
    with s.engine.begin() as conn:
        query = sa.update(reservations).where(reservations.c.id == rid)
        conn.execute(query.values(expires_at=ago(minutes=1)))
    store = s.order_app.extensions["orders"].store
    real_page = store.page

    def page(status: str, *args: Any, **kwargs: Any) -> Any:
        if status == "BACKORDERED":
            raise RuntimeError("injected: a row the listing cannot read")
        return real_page(status, *args, **kwargs)

    monkeypatch.setattr(store, "page", page)
    before = failures("backordered", "RuntimeError")
    report = a_pass(s, set())
    assert rid in report.reservations.expired
    assert failures("backordered", "RuntimeError") == before + 1


def test_a_reservation_kind_whose_listing_fails_leaves_the_next_kind_served(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pending reservations' listing fails; the held ones past expiry are expired in the
    same pass."""
    s = services
    goods = unique()
    s.seed(goods, 10)
    answer = s.order.post(
        "/reservations", json={"items": [{"goodsId": goods, "num": 2}], "ttlSeconds": 600}
    )
    assert answer.status_code == 201, answer.json
    rid = str(json_of(answer)["reservationId"])
    with s.engine.begin() as conn:
        query = sa.update(reservations).where(reservations.c.id == rid)
        conn.execute(query.values(expires_at=ago(minutes=1)))
    real_page = ReservationStore.page

    def page(self: ReservationStore, states: Any, *args: Any, **kwargs: Any) -> Any:
        if "pending" in states:
            raise RuntimeError("injected: a row the listing cannot read")
        return real_page(self, states, *args, **kwargs)

    monkeypatch.setattr(ReservationStore, "page", page)
    before = failures("reservations_pending", "RuntimeError")
    assert rid in a_pass(s, set()).reservations.expired
    assert failures("reservations_pending", "RuntimeError") == before + 1
