"""Reconciliation: settle the orders whose outcome a request could not establish.

A deduction can commit after the order service stopped polling: a stock worker that paused
between its last lease check and its commit, with no newer lock holder to fence it out, still
commits a correct deduction, but late. The order then says FAILED (not_confirmed) while its flow
exists. The stock flow is the truth, so this pass makes the orders agree with it:
- a PENDING or FAILED order whose flows exist (for exactly its lines) becomes CONFIRMED;
- a PENDING order older than the flag's TTL with no flow becomes FAILED: with its flag expired,
  no attempt can pass the stock service's pre-filter any more.
After it, invariant I3 holds. Run it periodically (`inventory reconcile`); it is idempotent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from order_service.stock_client import StockClient
from order_service.store import CONFIRMED, FAILED, PENDING, OrderStore

log = logging.getLogger(__name__)


@dataclass
class ReconcileReport:
    examined: int = 0
    confirmed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)  # flows that are not the order's lines
    unreachable: int = 0


def reconcile(
    store: OrderStore,
    stock: StockClient,
    older_than: timedelta,
    horizon: timedelta,
    flag_ttl: timedelta,
    now: datetime | None = None,
    fence: int | None = None,
    before_write: Callable[[], None] = lambda: None,
) -> ReconcileReport:
    """One pass. `fence`: the elected reconciler's leader token; every write carries it, and
    store.Superseded ends the pass when a newer leader has written."""
    now = now or datetime.now(UTC).replace(tzinfo=None)
    report = ReconcileReport()
    for order in store.unsettled(now - horizon, now - older_than):
        report.examined += 1
        flows = stock.flows(order.id)
        if flows is None:
            report.unreachable += 1
            continue
        deducted = {f["goodsId"]: f["num"] for f in flows}
        if deducted and deducted == order.lines:
            before_write()
            reason = f"reconciled: deducted after the request ended ({order.reason})"
            if store.settle(order.id, order.status, CONFIRMED, reason, fence):
                report.confirmed.append(order.id)
                log.warning(
                    "order %s was %s but its flows exist: CONFIRMED", order.id, order.status
                )
        elif deducted:
            report.mismatched.append(order.id)  # for a person to look at; never guessed
        elif order.status == PENDING and now - order.created_at > flag_ttl:
            reason = f"not_confirmed (reconciled): {order.reason}"
            settled = store.settle(order.id, PENDING, FAILED, reason, fence)
            if settled:
                report.failed.append(order.id)
    return report
