"""Reconciliation makes orders agree with the stock flow when a deduction lands late."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import redis as redis_lib

from order_service.reconcile import reconcile
from shared.settings import Settings
from tests.conftest import unique
from tests.helpers import Services, running_services


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings) as s:
        yield s


def later(minutes: float) -> datetime:
    return datetime.now(UTC).replace(tzinfo=None) + timedelta(minutes=minutes)


def run(services: Services, now: datetime, flag_ttl_s: float = 1800) -> object:
    deps = services.order_app.extensions["orders"]
    return reconcile(
        deps.store,
        deps.stock,
        older_than=timedelta(seconds=30),
        horizon=timedelta(hours=1),
        flag_ttl=timedelta(seconds=flag_ttl_s),
        now=now,
    )


def test_a_failed_order_whose_deduction_landed_late_becomes_confirmed(services: Services) -> None:
    goods, user = unique(), unique("u")
    services.seed(goods, 3)
    # The order gave up (FAILED, not_confirmed) ...
    deps = services.order_app.extensions["orders"]
    order_id = unique("o")
    deps.store.create_pending(order_id, user, {goods: 1}, None, None)
    deps.store.finish(order_id, "FAILED", "not_confirmed")
    # ... and then its paused attempt committed the deduction.
    redis_lib.Redis.from_url(services.settings.redis_url).set(order_id, "orderId", ex=60)
    answer = services.stock.put(
        f"/reduceStock/{order_id}", json=[{"goodsId": goods, "goodsNum": 1}]
    )
    assert answer.json["outcome"] == "deducted"

    report = run(services, now=later(5))
    assert order_id in report.confirmed  # type: ignore[attr-defined]
    row = services.order.get(f"/orders/{order_id}").json
    assert row["status"] == "CONFIRMED" and row["reason"].startswith("reconciled")
    assert order_id not in run(services, now=later(5)).confirmed  # type: ignore[attr-defined]


def test_a_pending_order_without_flows_fails_once_its_flag_has_expired(services: Services) -> None:
    deps = services.order_app.extensions["orders"]
    young, old = unique("o"), unique("o")
    for order_id in (young, old):
        deps.store.create_pending(order_id, unique("u"), {unique(): 1}, None, None)
        deps.store.finish(order_id, "PENDING", "outcome_unknown: ConnectError")
    report = run(services, now=later(2), flag_ttl_s=60)
    assert {young, old} <= set(report.failed)  # type: ignore[attr-defined]
    assert services.order.get(f"/orders/{old}").json["status"] == "FAILED"


def test_a_failed_order_with_no_flows_stays_failed(services: Services) -> None:
    goods = unique()
    services.seed(goods, 0)
    response = services.order.post("/genOrder", json={"userId": unique("u"), "goodsIds": [goods]})
    assert response.status_code == 409
    run(services, now=later(5))
    assert services.order.get(f"/orders/{response.json['orderId']}").json["status"] == "FAILED"
