"""Reservations against the real stack (each database): POST /reservations holds units under
the lock as a stock-side hold of the reservation's own flag, a genOrder carrying the
reservationId turns it into the order with no second deduction, DELETE releases it, and the
elected reconciler's pass expires it; exactly one of consumed, released and expired, whatever
races, with the units counted once."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from order_service.placing.client import StockClient
from order_service.placing.retry import CallPolicy
from order_service.reservations.holds import Settlement
from order_service.reservations.store import ReservationStore
from order_service.settling.reconcile import reconcile
from order_service.settling.reservations import ReservationReport, reconcile_reservations
from order_service.storage.tables import orders, reservations
from shared.config.settings import Settings
from stock_service.storage.tables import stock_return
from tests.conftest import unique
from tests.helpers import Services, running_services
from tests.integration.test_order_partial_fill import add_location, at, seed_at
from tests.integration.test_settlement import Failing, first_reduce_answer_lost, wrapped


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings) as s:
        yield s


def reserve(
    s: Services, items: list[dict[str, Any]], ttl: Any = 600, user: str | None = None
) -> Any:
    body: dict[str, Any] = {"items": items, "ttlSeconds": ttl}
    if user is not None:
        body["userId"] = user
    return s.order.post("/reservations", json=body)


def held(s: Services, goods: str, units: int = 2, seeded: int = 5) -> str:
    s.seed(goods, seeded)
    answer = reserve(s, [{"goodsId": goods, "num": units}])
    assert answer.status_code == 201, answer.json
    return str(answer.json["reservationId"])


def order_of(s: Services, rid: str, goods: str, units: int = 2, **extra: Any) -> Any:
    body = {"userId": unique("u"), "items": [{"goodsId": goods, "num": units}], **extra}
    return s.order_app.test_client().post("/genOrder", json={**body, "reservationId": rid})


def state(s: Services, rid: str) -> dict[str, Any]:
    answer = s.order.get(f"/reservations/{rid}")
    assert answer.status_code == 200, answer.json
    return dict(answer.json)


def stock_of(s: Services, goods: str) -> tuple[int, int]:
    level = s.stock.get(f"/stock/{goods}").json
    return level["num"], level["held"]


def returns(s: Services, flag: str) -> list[Any]:
    with s.engine.connect() as conn:
        return list(conn.execute(sa.select(stock_return).where(stock_return.c.flag == flag)))


def expires_in(s: Services, rid: str, seconds: float) -> None:
    """Its expiry moved to `seconds` from now (negative: past), as time passing would."""
    stamp = datetime.now(UTC).replace(tzinfo=None) + timedelta(seconds=seconds)
    with s.engine.begin() as conn:
        conn.execute(
            sa.update(reservations).where(reservations.c.id == rid).values(expires_at=stamp)
        )


def stock_client(s: Services) -> StockClient:
    return StockClient(
        "http://stock", CallPolicy(5, 0, 10, 0), transport=httpx.WSGITransport(app=s.stock_app)
    )


def expiry_pass(s: Services, older_than: float = 140.0) -> ReservationReport:
    store = ReservationStore(s.order_app.extensions["orders"].store)
    with stock_client(s) as stock:
        now = datetime.now(UTC).replace(tzinfo=None)
        return reconcile_reservations(
            Settlement(store, stock), stock, now, timedelta(seconds=older_than)
        )


def reservation_count(s: Services) -> int:
    with s.engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(reservations)).scalar_one())


# --- reserve, consume, release, expire -------------------------------------------------------


def test_an_order_consumes_its_reservation_without_a_second_deduction(services: Services) -> None:
    s, goods = services, unique()
    s.seed(goods, 5)
    made = reserve(s, [{"goodsId": goods, "num": 2}], ttl=300)
    assert made.status_code == 201, made.json
    rid = made.json["reservationId"]
    assert made.json["state"] == "held" and made.json["expiresAt"]
    assert made.json["allocations"] == [{"goodsId": goods, "location": "default", "num": 2}]
    assert stock_of(s, goods) == (3, 2)  # deducted once, held for the cart
    placed = order_of(s, rid, goods)
    assert (placed.status_code, placed.json["status"]) == (200, "CONFIRMED"), placed.json
    assert placed.json["orderId"] == rid and placed.json["reservationId"] == rid
    assert stock_of(s, goods) == (3, 0)  # the level moved once; sold, no longer held
    assert [(f["goods_id"], f["num"]) for f in s.flows(flag=rid)] == [(goods, 2)]
    view = s.order.get(f"/orders/{rid}").json
    assert view["status"] == "CONFIRMED" and view["items"] == [{"goodsId": goods, "num": 2}]
    after = state(s, rid)
    assert (after["state"], after["orderId"]) == ("consumed", rid)
    # Consumed: a second order, a release, are refused; its cancel returns its units once.
    again = order_of(s, rid, goods)
    assert (again.status_code, again.json["refused"], again.json["orderId"]) == (
        409,
        "consumed",
        rid,
    )
    released = s.order.delete(f"/reservations/{rid}")
    assert (released.status_code, released.json["refused"]) == (409, "consumed")
    cancelled = s.order.post(f"/orders/{rid}/cancel")
    assert (cancelled.status_code, cancelled.json["status"]) == (200, "CANCELLED")
    assert stock_of(s, goods) == (5, 0) and len(returns(s, rid)) == 1


def test_a_reserved_hold_awaits_payment_with_its_units_still_held(services: Services) -> None:
    s, goods = services, unique()
    rid = held(s, goods)
    placed = order_of(s, rid, goods, payWithinSeconds=60)
    assert (placed.status_code, placed.json["status"]) == (200, "AWAITING_PAYMENT"), placed.json
    assert placed.json["payBy"] and stock_of(s, goods) == (3, 2)
    paid = s.order.post(f"/orders/{rid}/pay")
    assert (paid.status_code, paid.json["status"]) == (200, "CONFIRMED")
    assert stock_of(s, goods) == (3, 0) and len(s.flows(flag=rid)) == 1


def test_a_repeat_of_the_orders_key_answers_the_same_order(services: Services) -> None:
    s, goods, key = services, unique(), {"Idempotency-Key": unique("key")}
    rid = held(s, goods)
    body = {"userId": "u1", "items": [{"goodsId": goods, "num": 2}], "reservationId": rid}
    first = s.order.post("/genOrder", json=body, headers=key)
    repeat = s.order.post("/genOrder", json=body, headers=key)
    assert (first.status_code, repeat.status_code) == (200, 200), repeat.json
    assert repeat.json["orderId"] == rid and repeat.headers["Idempotent-Replayed"] == "true"
    assert stock_of(s, goods) == (3, 0)


def test_an_order_and_its_repeat_racing_both_answer_the_one_order(services: Services) -> None:
    """Sent at once with one key: whichever consumes the reservation, the other finds it
    consumed by its own key's order and answers that order, never a 409."""
    s = services
    for _ in range(5):
        goods, key = unique(), {"Idempotency-Key": unique("key")}
        rid = held(s, goods)
        body = {"userId": "u1", "items": [{"goodsId": goods, "num": 2}], "reservationId": rid}

        def place(_: int, body: dict[str, Any] = body, key: dict[str, str] = key) -> Any:
            return s.order.post("/genOrder", json=body, headers=key)

        with ThreadPoolExecutor(max_workers=2) as pool:
            answers = list(pool.map(place, range(2)))
        assert [a.status_code for a in answers] == [200, 200], [a.json for a in answers]
        assert {a.json["orderId"] for a in answers} == {rid}
        assert stock_of(s, goods) == (3, 0) and len(s.flows(flag=rid)) == 1


def test_a_release_returns_the_units_once_and_a_repeat_answers_the_same(
    services: Services,
) -> None:
    s, goods = services, unique()
    rid = held(s, goods)
    first = s.order.delete(f"/reservations/{rid}")
    assert (first.status_code, first.json["state"], first.json["unitsReturned"]) == (
        200,
        "released",
        True,
    )
    assert stock_of(s, goods) == (5, 0)
    repeat = s.order.delete(f"/reservations/{rid}")
    assert (repeat.status_code, repeat.json["state"]) == (200, "released")  # idempotent
    assert stock_of(s, goods) == (5, 0) and len(returns(s, rid)) == 1
    late = order_of(s, rid, goods)
    assert (late.status_code, late.json["refused"]) == (409, "released")
    assert s.order.get(f"/orders/{rid}").status_code == 404


def test_the_reconcilers_pass_expires_a_reservation_and_returns_its_units_once(
    services: Services,
) -> None:
    s, goods = services, unique()
    rid = held(s, goods)
    expires_in(s, rid, -0.001)
    # Past its time, before the pass: never consumed, and a read changes nothing.
    late = order_of(s, rid, goods)
    assert (late.status_code, late.json["refused"], late.json["state"]) == (409, "expired", "held")
    early = s.order.delete(f"/reservations/{rid}")  # from now on it can only expire
    assert (early.status_code, early.json["refused"]) == (409, "expired")
    assert state(s, rid)["state"] == "held" and stock_of(s, goods) == (3, 2)
    with stock_client(s) as stock:  # the elected reconciler's whole pass, as it runs it
        report = reconcile(s.order_app.extensions["orders"].store, stock, timedelta(seconds=140))
    assert rid in report.reservations.expired and rid in report.reservations.returned
    after = state(s, rid)
    assert (after["state"], after["unitsReturned"]) == ("expired", True)
    assert stock_of(s, goods) == (5, 0) and len(returns(s, rid)) == 1
    assert rid not in expiry_pass(s).expired  # a second pass finds nothing
    assert stock_of(s, goods) == (5, 0) and len(returns(s, rid)) == 1
    refused = s.order.delete(f"/reservations/{rid}")
    assert (refused.status_code, refused.json["refused"]) == (409, "expired")
    assert order_of(s, rid, goods).json["refused"] == "expired"


def test_a_reservation_is_held_from_its_location(services: Services) -> None:
    s, goods = services, unique()
    north = add_location(s)
    s.seed(goods, 10)
    seed_at(s, goods, north, 3)
    item = {"goodsId": goods, "num": 2, "location": north}
    made = reserve(s, [item])
    assert made.status_code == 201, made.json
    assert made.json["allocations"] == [{"goodsId": goods, "location": north, "num": 2}]
    assert made.json["items"] == [item] and at(s, goods)[north] == 1
    rid = made.json["reservationId"]
    elsewhere = order_of(s, rid, goods)  # the same units, but not from the same location
    assert (elsewhere.status_code, elsewhere.json["field"]) == (422, "items")
    placed = s.order.post("/genOrder", json={"userId": "u", "items": [item], "reservationId": rid})
    assert placed.status_code == 200, placed.json
    assert placed.json["allocations"] == [{"goodsId": goods, "location": north, "num": 2}]
    assert s.order.get(f"/orders/{rid}").json["allocations"] == placed.json["allocations"]
    assert at(s, goods)[north] == 1 and len(s.flows(flag=rid)) == 1


# --- outcomes the request could not learn ------------------------------------------------------


def test_a_lost_answer_is_learned_from_the_stock_database(settings: Settings) -> None:
    started, _ = wrapped(
        settings, lambda i: Failing(i, lambda _r: False, lose=first_reduce_answer_lost())
    )
    with started as s:
        goods = unique()
        s.seed(goods, 5)
        answer = reserve(s, [{"goodsId": goods, "num": 2}])
        assert answer.status_code == 201, answer.json
        assert stock_of(s, goods) == (3, 2) and len(s.flows(flag=answer.json["reservationId"])) == 1


def test_an_unreachable_stock_service_leaves_it_pending_for_the_reconciler(
    settings: Settings,
) -> None:
    """No call reaches the stock service: 503 pending, nothing held; the pass voids its flag
    (failed), and a deduction of it arriving later would be refused."""
    started, _ = wrapped(settings, lambda i: Failing(i, lambda _r: True))
    with started as s:
        goods = unique()
        s.seed(goods, 5)
        answer = reserve(s, [{"goodsId": goods, "num": 2}])
        assert (answer.status_code, answer.json["state"]) == (503, "pending"), answer.json
        assert answer.json["dependency"] == "stock service"
        rid = answer.json["reservationId"]
        assert rid in expiry_pass(s, older_than=0).settled
        assert state(s, rid)["state"] == "failed" and stock_of(s, goods) == (5, 0)


def test_a_deduction_whose_answers_were_all_lost_is_held_by_the_reconciler(
    settings: Settings,
) -> None:
    def lose(request: httpx.Request) -> bool:
        return request.url.path.startswith("/reduceStock")

    def fail(request: httpx.Request) -> bool:  # its decision cannot be asked either
        return request.url.path.startswith(("/flags", "/voidFlag"))

    started, _ = wrapped(settings, lambda i: Failing(i, fail, lose=lose))
    with started as s:
        goods = unique()
        s.seed(goods, 5)
        answer = reserve(s, [{"goodsId": goods, "num": 2}])
        assert (answer.status_code, answer.json["state"]) == (503, "pending"), answer.json
        rid = answer.json["reservationId"]
        assert rid in expiry_pass(s, older_than=0).settled
        after = state(s, rid)
        assert after["state"] == "held" and after["expiresAt"], after
        assert s.order.delete(f"/reservations/{rid}").status_code == 200
        assert stock_of(s, goods) == (5, 0) and len(returns(s, rid)) == 1


# --- the race: consume, release (twice) and expiry at once ---------------------------------------


def race_once(s: Services, n: int) -> str:
    """One held reservation raced by its genOrder, two DELETEs and the expiry pass, its
    expiry just past, now or just ahead; what it ended as, with the answers checked."""
    goods = unique()
    rid = held(s, goods)
    expires_in(s, rid, random.choice([-0.01, 0.0, 0.02, 0.05]))
    start = threading.Barrier(4)
    expired: list[str] = []

    def buy() -> int:
        start.wait()
        time.sleep(random.random() / 50)
        return int(order_of(s, rid, goods).status_code)

    def release() -> int:
        start.wait()
        time.sleep(random.random() / 50)
        return int(s.order_app.test_client().delete(f"/reservations/{rid}").status_code)

    def expire() -> int:
        start.wait()
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            expired.extend(expiry_pass(s).expired)
            if state(s, rid)["state"] != "held":
                break
            time.sleep(0.005)
        return 0

    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(f) for f in (buy, release, release, expire)]
        bought, *released = [f.result() for f in futures[:3]]
        futures[3].result()
    final = str(state(s, rid)["state"])
    level, held_units = stock_of(s, goods)
    with s.engine.connect() as conn:
        order = conn.execute(sa.select(orders.c.status).where(orders.c.id == rid)).first()
    assert len(s.flows(flag=rid)) == 1 and held_units == 0, n  # deducted once, held by none
    if final == "consumed":
        assert (bought, released, rid in expired) == (200, [409, 409], False), n
        assert level == 3 and returns(s, rid) == [] and order is not None, n
    else:
        assert final in ("released", "expired") and bought == 409, (n, final)
        assert released == ([200, 200] if final == "released" else [409, 409]), (n, final)
        assert (rid in expired) == (final == "expired"), n
        assert level == 5 and len(returns(s, rid)) == 1 and order is None, n  # back once
    return final


def test_consume_release_and_expiry_racing_end_in_exactly_one_state(services: Services) -> None:
    rounds = 25
    seen = [race_once(services, n) for n in range(rounds)]
    print(f"{rounds} races ended: {dict((x, seen.count(x)) for x in set(seen))}")


# --- bad input ----------------------------------------------------------------------------------


def test_an_unknown_reservation_is_404_everywhere(services: Services) -> None:
    s, goods, rid = services, unique(), unique("r")
    s.seed(goods, 5)
    assert s.order.get(f"/reservations/{rid}").status_code == 404
    assert s.order.delete(f"/reservations/{rid}").status_code == 404
    placed = order_of(s, rid, goods, units=1)
    assert (placed.status_code, placed.json["reservationId"]) == (404, rid)
    assert stock_of(s, goods) == (5, 0)


@pytest.mark.parametrize("ttl", [0, -5, 3601, "60", 1.5, True, None, [60]])
def test_a_bad_ttl_is_422_and_nothing_is_written(services: Services, ttl: Any) -> None:
    s, goods = services, unique()
    s.seed(goods, 5)
    before = reservation_count(s)
    answer = reserve(s, [{"goodsId": goods, "num": 1}], ttl=ttl)
    assert (answer.status_code, answer.json["field"]) == (422, "ttlSeconds"), answer.json
    assert "ttlSeconds" in answer.json["error"]
    assert reservation_count(s) == before and stock_of(s, goods) == (5, 0)


def test_a_ttl_at_its_bounds_and_a_whole_float_are_taken(services: Services) -> None:
    s, goods = services, unique()
    s.seed(goods, 5)
    for ttl in (1, 3600, 60.0):
        answer = reserve(s, [{"goodsId": goods, "num": 1}], ttl=ttl)
        assert (answer.status_code, answer.json["ttlSeconds"]) == (201, int(ttl)), answer.json


def test_unknown_goods_and_too_little_stock_hold_nothing(services: Services) -> None:
    s, known, missing = services, unique(), unique("missing")
    s.seed(known, 1)
    before = reservation_count(s)
    unknown = reserve(s, [{"goodsId": known, "num": 1}, {"goodsId": missing, "num": 1}])
    assert (unknown.status_code, unknown.json["goodsIds"]) == (422, [missing]), unknown.json
    assert reservation_count(s) == before and stock_of(s, known) == (1, 0)
    short = reserve(s, [{"goodsId": known, "num": 2}])
    assert (short.status_code, short.json["state"]) == (409, "failed"), short.json
    assert short.json["shortfalls"][0]["available"] == 1
    assert stock_of(s, known) == (1, 0)
    refused = order_of(s, short.json["reservationId"], known)
    assert (refused.status_code, refused.json["refused"]) == (409, "failed")
    nothing = s.order.delete(f"/reservations/{short.json['reservationId']}")
    assert (nothing.status_code, nothing.json["refused"]) == (409, "failed")


def test_an_order_unlike_its_reservation_is_422_and_leaves_it_held(services: Services) -> None:
    s, goods, other = services, unique(), unique()
    s.seed(other, 5)
    s.seed(goods, 5)
    made = reserve(s, [{"goodsId": goods, "num": 2}], user="alice")
    rid = made.json["reservationId"]
    for body, field in (
        ({"userId": "alice", "items": [{"goodsId": goods, "num": 1}]}, "items"),
        ({"userId": "alice", "items": [{"goodsId": other, "num": 2}]}, "items"),
        ({"userId": "alice", "items": [{"goodsId": goods, "num": 2}], "fill": "partial"}, "fill"),
        ({"userId": "bob", "items": [{"goodsId": goods, "num": 2}]}, "userId"),
    ):
        answer = s.order.post("/genOrder", json={**body, "reservationId": rid})
        assert (answer.status_code, answer.json["field"]) == (422, field), answer.json
    assert state(s, rid)["state"] == "held" and stock_of(s, goods) == (3, 2)
    good = {"userId": "alice", "goodsIds": [goods, goods], "reservationId": rid}
    assert s.order.post("/genOrder", json=good).status_code == 200  # the other form, summed
    assert stock_of(s, goods) == (3, 0) and stock_of(s, other) == (5, 0)
