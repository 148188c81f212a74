"""Order hosts whose clocks disagree (each database): every deadline is set and judged by the
database's clock, so a reservation or a hold ends the way its deadline says whichever host is
asked. Two hosts are simulated in one process by shifting the clock the order database's
writes stamp with (order_service.storage.store's `now`) by +2 s for one and -2 s for the other; the
database's clock, and this test's, are the machine's own."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

import order_service.storage.store
from order_service.reservations.store import EXPIRED, HELD, ReservationStore
from order_service.storage.tables import orders
from shared.config.settings import Settings
from shared.database.engines import utcnow
from tests.conftest import unique
from tests.helpers import Services, running_services
from tests.integration.test_reservations import (
    expires_in,
    held,
    order_of,
    reserve,
    returns,
    state,
    stock_of,
)

AHEAD, BEHIND = 2.0, -2.0  # the two hosts' clocks against the database's
MARGIN = 1.0  # how far from its deadline each request is made: less than either skew


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings) as s:
        yield s


@pytest.fixture
def on_host(monkeypatch: pytest.MonkeyPatch) -> Any:
    """on_host(seconds): the order service's writes from now on are made by a host whose
    clock is `seconds` off the database's."""

    def shift(seconds: float) -> None:
        skew = timedelta(seconds=seconds)
        monkeypatch.setattr(order_service.storage.store, "now", lambda: utcnow() + skew)

    return shift


def ask(s: Services, method: str, path: str, **kwargs: Any) -> Any:
    """The order service's answer to a request."""
    return s.order.open(path, method=method, **kwargs)


def pay_deadline_in(s: Services, order_id: str, seconds: float) -> None:
    """The hold's deadline moved to `seconds` from now (negative: past)."""
    deadline = utcnow() + timedelta(seconds=seconds)
    with s.engine.begin() as conn:
        conn.execute(sa.update(orders).where(orders.c.id == order_id).values(pay_deadline=deadline))


def hold(s: Services, goods: str) -> str:
    s.seed(goods, 5)
    items = [{"goodsId": goods, "num": 2}]
    placed = ask(
        s,
        "POST",
        "/genOrder",
        json={"userId": unique("u"), "items": items, "payWithinSeconds": 600},
    )
    assert (placed.status_code, placed.json["status"]) == (200, "AWAITING_PAYMENT"), placed.json
    return str(placed.json["orderId"])


def test_a_delete_through_a_host_ahead_before_expires_at_releases_and_another_host_agrees(
    services: Services, on_host: Any
) -> None:
    s, goods = services, unique()
    rid = held(s, goods)
    expires_in(s, rid, MARGIN)
    on_host(AHEAD)  # its clock says the reservation expired a second ago; it has not
    first = ask(s, "DELETE", f"/reservations/{rid}")
    assert (first.status_code, first.json["state"]) == (200, "released"), first.json
    on_host(BEHIND)
    second = ask(s, "DELETE", f"/reservations/{rid}")
    assert (second.status_code, second.json["state"]) == (200, "released"), second.json
    assert stock_of(s, goods) == (5, 0) and len(returns(s, rid)) == 1


def test_a_delete_through_a_host_behind_after_expires_at_is_refused_and_it_expires(
    services: Services, on_host: Any
) -> None:
    s, goods = services, unique()
    rid = held(s, goods)
    expires_in(s, rid, -MARGIN)
    on_host(BEHIND)  # its clock says a second is left; there is none
    first = ask(s, "DELETE", f"/reservations/{rid}")
    assert (first.status_code, first.json.get("refused")) == (409, "expired"), first.json
    on_host(AHEAD)
    second = ask(s, "DELETE", f"/reservations/{rid}")
    assert (second.status_code, second.json.get("refused")) == (409, "expired"), second.json
    consume = order_of(s, rid, goods)
    assert (consume.status_code, consume.json.get("refused")) == (409, "expired"), consume.json
    store = ReservationStore(s.order_app.extensions["orders"].store)
    moved, _ = store.move(rid, (HELD,), EXPIRED, "expired", due=True)  # the pass's expiry
    assert moved and state(s, rid)["state"] == "expired"
    assert stock_of(s, goods) == (3, 2) and returns(s, rid) == []  # nothing released


def test_an_expiry_through_a_host_ahead_waits_for_expires_at_and_the_buyer_may_consume(
    services: Services, on_host: Any
) -> None:
    s, goods = services, unique()
    rid = held(s, goods)
    expires_in(s, rid, MARGIN)
    on_host(AHEAD)  # a reconciler host whose clock is past the reservation's expiresAt
    store = ReservationStore(s.order_app.extensions["orders"].store)
    moved, after = store.move(rid, (HELD,), EXPIRED, "expired", due=True)  # the pass's expiry
    assert not moved and after is not None and after.state == HELD
    placed = order_of(s, rid, goods)  # through the same host, before expiresAt: sold
    assert (placed.status_code, placed.json.get("status")) == (200, "CONFIRMED"), placed.json
    assert state(s, rid)["state"] == "consumed" and stock_of(s, goods) == (3, 0)


def test_a_pay_through_a_host_ahead_before_the_deadline_is_paid_and_no_expiry_undoes_it(
    services: Services, on_host: Any
) -> None:
    s, goods = services, unique()
    order_id = hold(s, goods)
    pay_deadline_in(s, order_id, MARGIN)
    on_host(AHEAD)
    paid = ask(s, "POST", f"/orders/{order_id}/pay")
    assert (paid.status_code, paid.json["status"]) == (200, "CONFIRMED"), paid.json
    cancellation = s.order_app.extensions["orders"].cancellation
    expired = cancellation.expire(order_id)  # a reconciler host ahead as well
    assert expired.order.status == "CONFIRMED"
    assert ask(s, "GET", f"/orders/{order_id}").json["status"] == "CONFIRMED"
    assert s.level(goods) == 3 and returns(s, order_id) == []


def test_an_expiry_through_a_host_ahead_leaves_the_hold_payable_until_its_deadline(
    services: Services, on_host: Any
) -> None:
    s, goods = services, unique()
    order_id = hold(s, goods)
    pay_deadline_in(s, order_id, MARGIN)
    on_host(AHEAD)
    cancellation = s.order_app.extensions["orders"].cancellation
    assert cancellation.expire(order_id).order.status == "AWAITING_PAYMENT"
    on_host(BEHIND)
    paid = ask(s, "POST", f"/orders/{order_id}/pay")
    assert (paid.status_code, paid.json["status"]) == (200, "CONFIRMED"), paid.json
    assert s.level(goods) == 3 and returns(s, order_id) == []


def test_a_pay_through_a_host_behind_after_the_deadline_is_refused_as_the_expiry_says(
    services: Services, on_host: Any
) -> None:
    s, goods = services, unique()
    order_id = hold(s, goods)
    pay_deadline_in(s, order_id, -MARGIN)
    on_host(BEHIND)  # its clock says a second is left to pay; there is none
    late = ask(s, "POST", f"/orders/{order_id}/pay")
    assert (late.status_code, late.json.get("refused")) == (409, "expired"), late.json
    on_host(AHEAD)
    again = ask(s, "POST", f"/orders/{order_id}/pay")
    assert (again.status_code, again.json.get("refused")) == (409, "expired"), again.json
    assert ask(s, "GET", f"/orders/{order_id}").json["status"] == "CANCELLED"
    assert s.level(goods) == 5 and len(returns(s, order_id)) == 1


def test_deadlines_set_through_a_host_behind_run_the_whole_time_asked(
    services: Services, on_host: Any
) -> None:
    """expiresAt and payBy are the database's time when the hold was confirmed plus the
    seconds asked, not the writing host's (2 s short on a host behind)."""
    s, goods = services, unique()
    s.seed(goods, 5)
    on_host(BEHIND)
    slack = timedelta(seconds=0.5)  # SQLite's clock keeps milliseconds; a slow request
    before = utcnow()
    made = reserve(s, [{"goodsId": goods, "num": 1}], ttl=60)
    after = utcnow()
    assert made.status_code == 201, made.json
    expires = datetime.fromisoformat(made.json["expiresAt"])
    assert before + timedelta(seconds=60) - slack <= expires <= after + timedelta(seconds=60)
    before = utcnow()
    order_id = hold(s, goods)
    after = utcnow()
    pay_by = datetime.fromisoformat(ask(s, "GET", f"/orders/{order_id}").json["payBy"])
    assert before + timedelta(seconds=600) - slack <= pay_by <= after + timedelta(seconds=600)
