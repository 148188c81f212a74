"""/dashboard: a live page of the stack (orders/s, deductions/s, lock wait p50/p99, batch size,
fencing refusals, stock levels), drawn with uPlot (vendored in static/vendor/uplot, no CDN).

/dashboard/data is what the page polls every second: the cumulative counters of this service
and of the stock service (its /metrics, fetched here so the page needs one origin), summed
over labels. The page turns two successive samples into rates and quantiles.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

from apiflask import APIBlueprint
from flask import Response, current_app, jsonify
from prometheus_client.parser import text_string_to_metric_families

from shared.metrics import scrape
from shared.web.api_app import answers
from shared.web.schemas import Answer

dashboard_bp = APIBlueprint("dashboard", __name__, tag="Operations")


class DashboardSample(Answer):
    """Cumulative totals; the page turns two samples into rates. The stock service's part
    (deductions, batchSum, batchCount, fencingRefusals, lockLosses, lockWait, stock) is there
    when stockUp is true."""

    t: float
    orders: dict[str, float]
    stockUp: bool


@dashboard_bp.get("/dashboard")
@dashboard_bp.doc(responses=answers({200: (None, "The live dashboard page", "text/html")}))
def page() -> Response:
    """The live dashboard (uPlot), polling /dashboard/data every second."""
    # The app's own static folder (order_service/static): the page, its script, uPlot.
    return current_app.send_static_file("dashboard.html")


def _samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    return [
        (sample.name, sample.labels, sample.value)
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    ]


def summarize(order_text: str, stock_text: str | None) -> dict[str, Any]:
    """The page's sample: totals by what the charts need."""
    orders: dict[str, float] = defaultdict(float)
    for name, labels, value in _samples(order_text):
        if name == "orders_total":
            orders[labels["status"]] += value
    data: dict[str, Any] = {"t": time.time(), "orders": dict(orders), "stockUp": False}
    if stock_text is None:
        return data
    buckets: dict[float, float] = defaultdict(float)
    levels: dict[str, float] = {}
    totals: dict[str, float] = defaultdict(float)
    for name, labels, value in _samples(stock_text):
        if name == "lock_wait_seconds_bucket":
            buckets[float(labels["le"])] += value
        elif name == "stock_level":
            levels[labels["goods_id"]] = value
        elif name in (
            "deductions_total",
            "deduct_batch_size_sum",
            "deduct_batch_size_count",
            "fencing_refusals_total",
            "lock_losses_total",
        ):
            totals[name] += value
    data.update(
        stockUp=True,
        deductions=totals["deductions_total"],
        batchSum=totals["deduct_batch_size_sum"],
        batchCount=totals["deduct_batch_size_count"],
        fencingRefusals=totals["fencing_refusals_total"],
        lockLosses=totals["lock_losses_total"],
        # [[le seconds, cumulative count], ...]; the +Inf bucket's le is null (JSON has no inf)
        lockWait=[[le if le != float("inf") else None, n] for le, n in sorted(buckets.items())],
        stock=dict(sorted(levels.items())[:20]),
    )
    return data


@dashboard_bp.get("/dashboard/data")
@dashboard_bp.doc(responses=answers({200: (DashboardSample, "One sample of the counters")}))
def data() -> Response:
    """What the dashboard polls: this service's and the stock service's counters."""
    stock = current_app.extensions["orders"].stock
    try:
        answer = stock.http.get("/metrics", timeout=2.0)
        stock_text = answer.text if answer.status_code == 200 else None
    except Exception:
        stock_text = None
    return jsonify(summarize(scrape().decode(), stock_text))
