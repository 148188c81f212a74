"""How big the batches of a load were, on both sides, from the services' own metrics: the order
service's `order_batch_size` (orders placed in one batch) and the stock service's
`deduct_batch_size` (requests served in one lock hold), read from GET /metrics before and after
the load. A histogram's _sum and _count only grow, so the differences are the load's own batches
(every worker's, under gunicorn's multiprocess collector), whatever ran before it.

The answers also carry a batch size (Server-Timing, the lock's batchSize), but only for the
requests that succeeded and as each member saw it: a batch of 8 is counted 8 times there, once
here, so the mean here is per batch, which is what a member's share of a batch's work divides by.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import httpx
from prometheus_client.parser import text_string_to_metric_families

ORDER_BATCHES = "order_batch_size"  # order service: orders per batch
LOCK_HOLDS = "deduct_batch_size"  # stock service: requests per lock hold


@dataclass(frozen=True)
class Histogram:
    """A histogram's running totals, every label set added up."""

    sum: float = 0.0
    count: float = 0.0

    def __sub__(self, other: Histogram) -> Histogram:
        return Histogram(self.sum - other.sum, self.count - other.count)


def histograms(text: str) -> dict[str, Histogram]:
    """The histograms of a Prometheus text exposition, by name (without _sum/_count)."""
    out: dict[str, Histogram] = {}
    for family in text_string_to_metric_families(text):
        if family.type != "histogram":
            continue
        total, count = 0.0, 0.0
        for sample in family.samples:
            if sample.name == f"{family.name}_sum":
                total += sample.value
            elif sample.name == f"{family.name}_count":
                count += sample.value
        out[family.name] = Histogram(total, count)
    return out


def scrape(url: str) -> dict[str, Histogram]:
    """A service's histograms now (its GET /metrics); none if it does not answer, so a bench
    run never fails for want of a figure that only describes it."""
    try:
        response = httpx.get(f"{url}/metrics", timeout=10)
        response.raise_for_status()
    except httpx.HTTPError:
        return {}
    return histograms(response.text)


Scrape = dict[str, dict[str, Histogram]]  # by service: "order", "stock"


def scrape_all(urls: Mapping[str, str]) -> Scrape:
    return {service: scrape(url) for service, url in urls.items()}


@dataclass
class BatchCounts:
    """The batches of one measure, added up over its rounds: orders and order-side batches,
    requests and lock holds."""

    orders: float = 0.0
    order_batches: float = 0.0
    requests: float = 0.0
    holds: float = 0.0

    def add(self, before: Scrape, after: Scrape) -> None:
        order = _delta(before, after, "order", ORDER_BATCHES)
        stock = _delta(before, after, "stock", LOCK_HOLDS)
        self.orders += order.sum
        self.order_batches += order.count
        self.requests += stock.sum
        self.holds += stock.count

    @property
    def orders_per_batch(self) -> float | None:
        return round(self.orders / self.order_batches, 2) if self.order_batches else None

    @property
    def requests_per_hold(self) -> float | None:
        return round(self.requests / self.holds, 2) if self.holds else None


def _delta(before: Scrape, after: Scrape, service: str, name: str) -> Histogram:
    if name not in after.get(service, {}):
        return Histogram()
    return after[service][name] - before.get(service, {}).get(name, Histogram())
