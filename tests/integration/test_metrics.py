"""/metrics of both services in one process (the registry of this process): every metric the
docs/observability.md lists shows up after a few orders, and the stock level is read at scrape
time."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from shared.config.settings import Settings
from tests.conftest import unique
from tests.helpers import Services, running_services


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings) as s:
        yield s


def value(text: str, sample: str) -> float:
    """The value of one sample line, e.g. 'deductions_total{outcome="deducted"}'."""
    match = re.search(rf"^{re.escape(sample)} (\S+)$", text, re.M)
    assert match, f"{sample} not in /metrics"
    return float(match[1])


def test_metrics_after_a_few_orders(services: Services) -> None:
    goods = unique()
    services.seed(goods, 2)
    for _ in range(3):  # two confirmed, one refused for lack of stock
        services.order.post("/genOrder", json={"userId": unique("u"), "goodsIds": [goods]})
    order = services.order.get("/metrics")
    stock = services.stock.get("/metrics")
    assert order.status_code == stock.status_code == 200
    assert order.content_type.startswith("text/plain")
    o, s = order.get_data(as_text=True), stock.get_data(as_text=True)
    assert value(o, 'orders_total{reason="none",status="CONFIRMED"}') >= 2
    assert value(o, 'orders_total{reason="insufficient_stock",status="FAILED"}') >= 1
    # Listed, and not counted here: only an answer that leaves an order undecided is polled.
    # (`>= 2` held only when an earlier test of the same process had polled.)
    assert value(o, "confirmation_polls_total") >= 0
    assert "stock_call_retries_total" in o
    route = 'http_requests_total{method="POST",route="/genOrder",service="order",status="200"}'
    assert value(o, route) >= 2
    assert value(s, 'deductions_total{outcome="deducted"}') >= 2
    assert value(s, 'deductions_total{outcome="insufficient"}') >= 1
    assert value(s, 'lock_wait_seconds_count{backend="zookeeper"}') >= 3
    assert value(s, 'lock_hold_seconds_count{backend="zookeeper"}') >= 3
    assert value(s, "deduct_batch_size_count") >= 3
    assert "fencing_refusals_total" in s and "lock_losses_total" in s
    assert value(s, f'stock_level{{goods_id="{goods}"}}') == 0  # read from the table now
