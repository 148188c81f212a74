"""Prometheus metrics of both services (prometheus_client), and the /metrics route.

Under gunicorn every worker is a process: with PROMETHEUS_MULTIPROC_DIR set (`inventory up`
gives each service a folder; inventory/local/gunicorn_hooks.py wipes it when gunicorn starts and
marks dead workers), each process writes its values there and /metrics adds them up. Without
it (tests in one process) the process's own registry is served.

The metric objects are module-level, as prometheus_client intends: they hold values, not
connections, so nothing connects at import.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping

from apiflask import APIFlask
from flask import Response, g, request
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from shared.web.api_app import answers

LATENCY = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)

# Both services.
HTTP_REQUESTS = Counter(
    "http_requests_total", "HTTP requests answered", ["service", "route", "method", "status"]
)
HTTP_SECONDS = Histogram(
    "http_request_duration_seconds", "Time to answer", ["service", "route"], buckets=LATENCY
)
# The order service.
ORDERS = Counter("orders_total", "Orders decided, by status and reason", ["status", "reason"])
STOCK_CALL_RETRIES = Counter(
    "stock_call_retries_total", "Calls to the stock service repeated after the first"
)
CONFIRMATION_POLLS = Counter(
    "confirmation_polls_total", "Reads of the stock flow to confirm an order"
)
RESERVATIONS = Counter(
    "reservations_total",
    "Reservations moved, by the state they moved to (held, failed, consumed, released, expired)",
    ["state"],
)
# The elected reconciler: the items a pass skipped because handling them raised (a row lock
# waited out, a statement cut, an answer it could not read, a bug), by pass and reason; each is
# tried again by the next pass. Items, not passes: one stuck order shows as one a pass.
PASS_ITEM_FAILURES = Counter(
    "reconcile_item_failures_total",
    "Items a reconciler's pass skipped after an error, by pass and reason",
    ["pass", "reason"],
)
# The stock service.
DEDUCTIONS = Counter("deductions_total", "reduceStock requests decided, by outcome", ["outcome"])
LOCK_WAIT = Histogram(
    "lock_wait_seconds", "From a batch's claim to its lock held", ["backend"], buckets=LATENCY
)
LOCK_HOLD = Histogram(
    "lock_hold_seconds", "The read-check-write done under the lock", ["backend"], buckets=LATENCY
)
BATCH_SIZE = Histogram(
    "deduct_batch_size", "Requests served in one lock hold", buckets=(1, 2, 4, 8, 16, 32, 64)
)
ORDER_BATCH_SIZE = Histogram(
    "order_batch_size",
    "Orders placed in one batch of the order service",
    buckets=(1, 2, 4, 8, 16, 32, 64),
)
FENCING_REFUSALS = Counter(
    "fencing_refusals_total", "Writes refused because a newer lock holder had written"
)
LOCK_LOSSES = Counter("lock_losses_total", "Requests ended because the lock may have been lost")
# The queue of one goods id's lock in a stock process (stock_service/deduction/lock_queue.py):
# requests waiting for it, and newcomers refused past LOCK_QUEUE_MAX. Labelled by goods id for the
# longest queues only (a process's top ten, at most a hundred goods ids over its life, the
# rest as `other`): one series per goods id would be unbounded. Summed over live workers.
LOCK_QUEUE_WAITERS = Gauge(
    "lock_queue_waiters",
    "Requests waiting for a goods id's lock, the longest queues by goods id, the rest other",
    ["goods_id"],
    multiprocess_mode="livesum",
)
LOCK_QUEUE_REFUSALS = Counter(
    "lock_queue_refusals_total",
    "Requests refused at once because their goods id's lock queue was full (LOCK_QUEUE_MAX)",
    ["goods_id"],
)


class _Gauges(Collector):
    """Values read when Prometheus scrapes (the stock levels), not kept in the processes."""

    def __init__(self, read: Callable[[], Iterable[Metric]]) -> None:
        self.read = read

    def collect(self) -> Iterator[Metric]:
        yield from self.read()


class _ThisProcess(Collector):
    def collect(self) -> Iterator[Metric]:
        yield from REGISTRY.collect()


def gauge_family(name: str, doc: str, label: str, values: Mapping[str, float]) -> Metric:
    family = GaugeMetricFamily(name, doc, labels=[label])
    for key, value in sorted(values.items()):
        family.add_metric([key], value)
    return family


def install_metrics(
    app: APIFlask, service: str, scrape_time: Callable[[], Iterable[Metric]] | None = None
) -> None:
    """Count every request, and serve /metrics (with `scrape_time`'s gauges, if any)."""

    @app.before_request
    def _start_clock() -> None:
        g.metrics_started = time.perf_counter()

    @app.after_request
    def _count(response: Response) -> Response:
        route = request.url_rule.rule if request.url_rule is not None else "unmatched"
        if route != "/metrics":
            HTTP_REQUESTS.labels(service, route, request.method, str(response.status_code)).inc()
            started = g.get("metrics_started")
            if started is not None:
                HTTP_SECONDS.labels(service, route).observe(time.perf_counter() - started)
        return response

    @app.get("/metrics")
    @app.doc(
        tags=["Operations"],
        responses=answers({200: (None, "Prometheus text format, all workers", "text/plain")}),
    )
    def metrics() -> Response:
        """Prometheus metrics of this service."""
        return Response(scrape(scrape_time), mimetype=CONTENT_TYPE_LATEST)


def scrape(scrape_time: Callable[[], Iterable[Metric]] | None = None) -> bytes:
    """This service's metrics, all workers' (multiprocess) or this process's, as text."""
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(_ThisProcess())
    if scrape_time is not None:
        registry.register(_Gauges(scrape_time))
    return generate_latest(registry)
