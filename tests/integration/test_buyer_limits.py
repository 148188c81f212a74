"""The flash-sale rules per buyer against the real stack, on each database (docs/buyer-limits.md):
PUT/GET /buyer-limits/{goodsId} behind the admin token, with the body's rules; perBuyer judged
in the transaction that creates the order (50 concurrent orders of one buyer through two order
services sharing the database: exactly one sale); a refused order FAILED for good, with no
stock call; a cancel or a failure frees the units for a new order; maxHeld over reservations
and unpaid holds; the maxima of ttlSeconds and payWithinSeconds that settings lower."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

import order_service
from order_service.storage.buyer_limits import LIMIT_REFUSALS
from order_service.storage.tables import reservations
from shared.config.settings import Settings
from tests.conftest import ADMIN, unique
from tests.helpers import Services, running_services


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings) as s:
        yield s


def limit(s: Services, goods: str, **rules: Any) -> Any:
    answer = s.order.put(f"/buyer-limits/{goods}", json=rules, headers=ADMIN)
    assert answer.status_code == 200, answer.json
    return answer.json


def order(
    s: Services, user: str, goods: str, num: int = 1, key: str | None = None, **extra: Any
) -> Any:
    headers = {"Idempotency-Key": key} if key else {}
    body = {"userId": user, "items": [{"goodsId": goods, "num": num}], **extra}
    return s.order.post("/genOrder", json=body, headers=headers)


def reserve(s: Services, user: str | None, goods: str, num: int = 1, ttl: Any = 600) -> Any:
    body: dict[str, Any] = {"items": [{"goodsId": goods, "num": num}], "ttlSeconds": ttl}
    if user is not None:
        body["userId"] = user
    return s.order.post("/reservations", json=body)


def held_of(s: Services, goods: str) -> tuple[int, int]:
    level = s.stock.get(f"/stock/{goods}").json
    return level["num"], level["held"]


def refusals(reason: str) -> float:
    return LIMIT_REFUSALS.labels(reason)._value.get()


# --- the admin routes ----------------------------------------------------------------------


def test_the_rules_are_set_and_read_with_the_admin_token_only(services: Services) -> None:
    s, goods = services, unique()
    assert s.order.put(f"/buyer-limits/{goods}", json={"perBuyer": 1}).status_code == 401
    wrong = {"Authorization": "Bearer wrong"}
    assert s.order.get(f"/buyer-limits/{goods}", headers=wrong).status_code == 401
    never = s.order.get(f"/buyer-limits/{goods}", headers=ADMIN)
    assert never.status_code == 200, never.json
    assert never.json == {
        "goodsId": goods,
        "perBuyer": None,
        "maxHeld": None,
        "maxHeldDefault": None,
        "effectiveMaxHeld": None,
    }
    assert limit(s, goods, perBuyer=2, maxHeld=3)["effectiveMaxHeld"] == 3
    read = s.order.get(f"/buyer-limits/{goods}", headers=ADMIN).json
    assert (read["perBuyer"], read["maxHeld"]) == (2, 3)
    limit(s, goods, perBuyer=None)  # a PUT replaces both: maxHeld absent is none
    read = s.order.get(f"/buyer-limits/{goods}", headers=ADMIN).json
    assert (read["perBuyer"], read["maxHeld"]) == (None, None)


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"perBuyer": -1}, 422),
        ({"maxHeld": -5}, 422),
        ({"perBuyer": 1_000_000_001}, 422),
        ({"maxHeld": 10**30}, 422),
        ({"perBuyer": 1.5}, 400),  # not a whole number: the body's types, 400 as everywhere
        ({"perBuyer": "1"}, 400),
        ({"perBuyer": True}, 400),
        ({"maxHeld": [1]}, 400),
    ],
)
def test_a_bad_rule_is_refused_and_nothing_written(
    services: Services, body: dict[str, Any], code: int
) -> None:
    s, goods = services, unique()
    limit(s, goods, perBuyer=4)
    answer = s.order.put(f"/buyer-limits/{goods}", json=body, headers=ADMIN)
    assert answer.status_code == code, answer.json
    assert answer.json["field"] in body
    assert s.order.get(f"/buyer-limits/{goods}", headers=ADMIN).json["perBuyer"] == 4


@pytest.mark.parametrize("goods", ["g" * 65, "a b", "g\x00", "é"])
def test_a_bad_goods_id_is_422(services: Services, goods: str) -> None:
    answer = services.order.put(f"/buyer-limits/{goods}", json={"perBuyer": 1}, headers=ADMIN)
    assert answer.status_code in (400, 404), answer.json
    assert services.order.get(f"/buyer-limits/{goods}", headers=ADMIN).status_code in (400, 404)


def test_goods_ids_differing_only_in_case_are_two_rules(services: Services) -> None:
    s, goods = services, unique("Sku")
    limit(s, goods, perBuyer=1)
    other = s.order.get(f"/buyer-limits/{goods.lower()}", headers=ADMIN).json
    assert other["perBuyer"] is None
    limit(s, goods.lower(), perBuyer=7)
    assert s.order.get(f"/buyer-limits/{goods}", headers=ADMIN).json["perBuyer"] == 1


# --- perBuyer ------------------------------------------------------------------------------


def test_fifty_concurrent_orders_of_one_buyer_limited_to_one_make_one_sale(
    settings: Settings,
) -> None:
    """Two order services (two combiners, as two processes) share the database: the buyer's
    row lock, not a batch, decides. Five of the keys are sent twice."""
    with running_services(settings) as s:
        second = order_service.create_app(
            settings.with_(order_batch_max=1), stock_transport=httpx.WSGITransport(app=s.stock_app)
        )
        try:
            goods, user = unique(), unique("u")
            s.seed(goods, 10)
            limit(s, goods, perBuyer=1)
            clients = [s.order, second.test_client()]
            start = threading.Barrier(50)

            def buy(i: int) -> Any:
                start.wait()
                body = {"userId": user, "items": [{"goodsId": goods, "num": 1}]}
                key = {"Idempotency-Key": f"{user}-{i % 45}"}
                return clients[i % 2].post("/genOrder", json=body, headers=key)

            with ThreadPoolExecutor(50) as pool:
                answers = list(pool.map(buy, range(50)))
        finally:
            second.extensions["orders"].close()
        codes = Counter((a.status_code, a.json["status"], a.json.get("reason")) for a in answers)
        sold = [a.json["orderId"] for a in answers if a.status_code == 200]
        assert set(sold) and len(set(sold)) == 1, codes
        [winner] = set(sold)
        refused = [a for a in answers if a.status_code == 409]
        assert len(sold) + len(refused) == 50, codes
        for a in refused:
            assert a.json["reason"] == "limit_per_buyer", a.json
            assert (a.json["goodsId"], a.json["limit"], a.json["had"]) == (goods, 1, 1)
        # Every key's answers name one order; the winner's key (sent once or twice) the sale.
        by_key: dict[int, set[str]] = {}
        for i, a in enumerate(answers):
            by_key.setdefault(i % 45, set()).add(a.json["orderId"])
        assert all(len(ids) == 1 for ids in by_key.values()), by_key
        rows = s.orders_of(user)
        assert len(rows) == 45
        assert Counter(r["status"] for r in rows) == {"CONFIRMED": 1, "FAILED": 44}
        assert all(r["reason"].startswith("limit_per_buyer") for r in rows if r["id"] != winner)
        assert s.level(goods) == 9
        assert len(s.flows(goods_id=goods)) == 1  # no stock call for a refused order
        print(f"50 orders: {dict(codes)}")


def test_a_refused_order_is_failed_for_good_and_a_cancel_frees_the_limit_for_a_new_one(
    services: Services,
) -> None:
    s, goods, user = services, unique(), unique("u")
    s.seed(goods, 10)
    limit(s, goods, perBuyer=2)
    before = refusals("limit_per_buyer")
    first = order(s, user, goods, 2)
    assert first.status_code == 200, first.json
    refused = order(s, user, goods, 1, key="k-refused")
    assert refused.status_code == 409, refused.json
    assert refused.json["status"] == "FAILED"
    assert refused.json["reason"] == "limit_per_buyer"
    assert (refused.json["goodsId"], refused.json["limit"], refused.json["had"]) == (goods, 2, 2)
    assert refusals("limit_per_buyer") == before + 1
    rid = refused.json["orderId"]
    assert s.flows(flag=rid) == []  # no stock call
    assert s.level(goods) == 8
    # Another buyer is not limited by this one.
    assert order(s, unique("u"), goods, 2).status_code == 200
    cancelled = s.order.post(f"/orders/{first.json['orderId']}/cancel")
    assert cancelled.status_code == 200 and cancelled.json["status"] == "CANCELLED"
    # The refused order stays refused: its key answers the same, and it is never a sale.
    again = order(s, user, goods, 1, key="k-refused")
    assert again.status_code == 409, again.json
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert {k: again.json[k] for k in ("orderId", "reason", "goodsId", "limit", "had")} == {
        "orderId": rid,
        "reason": "limit_per_buyer",
        "goodsId": goods,
        "limit": 2,
        "had": 2,
    }
    view = s.order.get(f"/orders/{rid}").json
    assert view["status"] == "FAILED" and view["reason"].startswith("limit_per_buyer")
    assert s.order.post(f"/orders/{rid}/cancel").status_code == 409  # nothing to cancel
    # A NEW order has the units the cancel freed.
    fresh = order(s, user, goods, 2, key="k-new")
    assert fresh.status_code == 200, fresh.json
    assert order(s, user, goods, 2, key="k-new").json["orderId"] == fresh.json["orderId"]
    assert order(s, user, goods, 1).status_code == 409  # the repeat counted nothing twice
    assert s.level(goods) == 6


def test_an_order_failed_for_lack_of_stock_frees_the_limit(services: Services) -> None:
    s, goods, user = services, unique(), unique("u")
    s.seed(goods, 1)
    limit(s, goods, perBuyer=2)
    short = order(s, user, goods, 2)
    assert short.status_code == 409 and short.json["reason"] == "insufficient_stock", short.json
    assert order(s, user, goods, 1).status_code == 200  # the failed order counts nothing
    s.seed(goods, 5)
    assert order(s, user, goods, 1).status_code == 200
    third = order(s, user, goods, 1)
    assert third.status_code == 409 and third.json["had"] == 2, third.json


def test_a_reservation_s_order_counts_and_is_refused_past_per_buyer(services: Services) -> None:
    s, goods, user = services, unique(), unique("u")
    s.seed(goods, 10)
    limit(s, goods, perBuyer=2)
    assert order(s, user, goods, 2).status_code == 200
    held = reserve(s, user, goods, 1)
    assert held.status_code == 201, held.json
    rid = held.json["reservationId"]
    body = {"userId": user, "items": [{"goodsId": goods, "num": 1}], "reservationId": rid}
    consumed = s.order.post("/genOrder", json=body)
    assert consumed.status_code == 409, consumed.json
    assert consumed.json["reason"] == "limit_per_buyer" and consumed.json["had"] == 2
    assert s.order.get(f"/reservations/{rid}").json["state"] == "held"  # still held


# --- maxHeld -------------------------------------------------------------------------------


def test_reservations_past_max_held_are_refused_with_nothing_held(services: Services) -> None:
    s, goods, user = services, unique(), unique("u")
    s.seed(goods, 10)
    limit(s, goods, maxHeld=3)
    before = refusals("limit_held")
    assert reserve(s, user, goods, 2).status_code == 201
    hold = order(s, user, goods, 1, payWithinSeconds=600)
    assert hold.status_code == 200 and hold.json["status"] == "AWAITING_PAYMENT", hold.json
    refused = reserve(s, user, goods, 1)
    assert refused.status_code == 409, refused.json
    assert refused.json["reason"] == "limit_held"
    assert (refused.json["goodsId"], refused.json["limit"], refused.json["had"]) == (goods, 3, 3)
    assert refusals("limit_held") == before + 1
    assert held_of(s, goods) == (7, 3)  # nothing more held
    with s.engine.connect() as conn:
        mine = conn.execute(
            sa.select(sa.func.count()).where(reservations.c.user_id == user)
        ).scalar()
    assert mine == 1  # the refused one left no row
    refused_hold = order(s, user, goods, 1, payWithinSeconds=600)
    assert refused_hold.status_code == 409 and refused_hold.json["reason"] == "limit_held"
    # A plain order is no hold; another buyer has a cap of their own; paying frees a unit.
    assert order(s, user, goods, 1).status_code == 200
    assert reserve(s, unique("u"), goods, 3).status_code == 201
    assert s.order.post(f"/orders/{hold.json['orderId']}/pay").status_code == 200
    assert reserve(s, user, goods, 1).status_code == 201


def test_the_default_max_held_applies_to_goods_ids_without_their_own(settings: Settings) -> None:
    with running_services(settings.with_(buyer_max_held_default=1)) as s:
        goods, user = unique(), unique("u")
        s.seed(goods, 5)
        shown = s.order.get(f"/buyer-limits/{goods}", headers=ADMIN).json
        assert (shown["maxHeldDefault"], shown["effectiveMaxHeld"]) == (1, 1)
        assert reserve(s, user, goods, 1).status_code == 201
        assert reserve(s, user, goods, 1).json["limit"] == 1
        assert reserve(s, None, goods, 2).status_code == 201  # no buyer named: no cap
        limit(s, goods, maxHeld=2)
        assert reserve(s, user, goods, 1).status_code == 201


# --- the maxima settings lower -------------------------------------------------------------


def test_ttl_and_pay_within_past_their_settings_are_422(settings: Settings) -> None:
    lowered = settings.with_(reservation_ttl_max_seconds=60, pay_within_max_seconds=120)
    with running_services(lowered) as s:
        goods, user = unique(), unique("u")
        s.seed(goods, 5)
        too_long = reserve(s, user, goods, 1, ttl=61)
        assert too_long.status_code == 422, too_long.json
        assert "RESERVATION_TTL_MAX_SECONDS" in too_long.json["error"]
        assert "60" in too_long.json["error"]
        assert reserve(s, user, goods, 1, ttl=60).status_code == 201
        late = order(s, user, goods, 1, payWithinSeconds=121)
        assert late.status_code == 422, late.json
        assert "120" in late.json["error"] and "PAY_WITHIN_MAX_SECONDS" in late.json["error"]
        assert order(s, user, goods, 1, payWithinSeconds=120).status_code == 200
        assert held_of(s, goods) == (3, 2)
        schema = s.order.get("/openapi.json").json["components"]["schemas"]
        assert "PAY_WITHIN_MAX_SECONDS" in str(schema)


def test_many_buyers_at_once_each_get_their_limit_and_no_error(settings: Settings) -> None:
    """A sale's crowd: 60 buyers clicking twice at once through two order services, limited to
    one each: each buyer one sale and one refusal, no 5xx (the buyers' row locks taken in
    batches never wait in a circle, on any database)."""
    with running_services(settings) as s:
        second = order_service.create_app(
            settings, stock_transport=httpx.WSGITransport(app=s.stock_app)
        )
        try:
            goods = unique()
            s.seed(goods, 200)
            limit(s, goods, perBuyer=1)
            buyers = [unique("u") for _ in range(60)]
            clicks = [b for b in buyers for _ in range(2)]
            clients = [s.order, second.test_client()]
            start = threading.Barrier(len(clicks))

            def buy(i: int) -> Any:
                start.wait()
                body = {"userId": clicks[i], "items": [{"goodsId": goods, "num": 1}]}
                return clients[i % 2].post("/genOrder", json=body)

            with ThreadPoolExecutor(len(clicks)) as pool:
                answers = list(pool.map(buy, range(len(clicks))))
        finally:
            second.extensions["orders"].close()
        codes = Counter(a.status_code for a in answers)
        assert codes == {200: 60, 409: 60}, [a.json for a in answers if a.status_code >= 500][:3]
        sold = Counter(clicks[i] for i, a in enumerate(answers) if a.status_code == 200)
        assert set(sold.values()) == {1} and len(sold) == 60
        assert s.level(goods) == 140
