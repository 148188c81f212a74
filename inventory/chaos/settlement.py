"""Watching the cluster settle a chaos run's orders by itself: the run never acts, it counts
what is left PENDING (or CANCELLING, or a hold past its deadline) until none is, or the bound
after the load passed, and how long the reconcilers took."""

from __future__ import annotations

import statistics
import time

from sqlalchemy import Engine, Select, func, select

from inventory.chaos import checker
from order_service.core.statuses import (
    AWAITING_PAYMENT,
    CANCELLING,
    HOLD_EXPIRED,
    PENDING,
    RECONCILED,
)
from order_service.storage.tables import order_details, orders
from shared.database.engines import utcnow


def _mine(prefix: str) -> Select[tuple[str]]:
    """The ids of the orders with a line of the run's goods."""
    return select(order_details.c.order_id).where(order_details.c.goods_id.like(f"{prefix}%"))


def pending_count(engine: Engine, prefix: str) -> int:
    """Orders with a line of this run's goods that the cluster has yet to settle: PENDING,
    CANCELLING, or holds past their deadline."""
    mine = _mine(prefix)
    unsettled = orders.c.status.in_((PENDING, CANCELLING)) | (
        (orders.c.status == AWAITING_PAYMENT) & (orders.c.pay_deadline <= utcnow())
    )
    with engine.connect() as conn:
        return int(
            conn.execute(
                select(func.count()).select_from(orders).where(unsettled, orders.c.id.in_(mine))
            ).scalar_one()
        )


def reconciled_times(engine: Engine, prefix: str) -> list[float]:
    """Seconds from placing to settling, for each order of this run the reconcilers settled
    (their reason says so)."""
    mine = _mine(prefix)
    with engine.connect() as conn:
        rows = conn.execute(
            select(orders.c.created_at, orders.c.updated_at).where(
                orders.c.reason.like(f"{RECONCILED}:%"), orders.c.id.in_(mine)
            )
        )
        return sorted((r.updated_at - r.created_at).total_seconds() for r in rows)


def wait_for_settlement(
    engine: Engine, prefix: str, load_ended: float, bound: float
) -> checker.Settlement:
    """Watch (never act) until no order of the run is PENDING, or the bound after the load."""
    deadline = load_ended + bound
    pending_at_end = left = pending_count(engine, prefix)
    while left and time.monotonic() < deadline:
        time.sleep(1.0)
        left = pending_count(engine, prefix)
    times = reconciled_times(engine, prefix)
    mine = _mine(prefix)
    with engine.connect() as conn:
        expired = conn.execute(
            select(func.count())
            .select_from(orders)
            .where(orders.c.reason.like(f"{HOLD_EXPIRED}%"), orders.c.id.in_(mine))
        ).scalar_one()
    return checker.Settlement(
        pending_at_start=pending_at_end,
        left=left,
        seconds=round(time.monotonic() - load_ended, 1),
        bound=bound,
        reconciled=len(times),
        slowest_s=round(times[-1], 1) if times else None,
        median_s=round(statistics.median(times), 1) if times else None,
        expired=int(expired),
    )
