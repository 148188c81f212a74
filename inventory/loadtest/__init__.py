"""`inventory loadtest`: many buyers over real HTTP against a running stack, or one started for
the run with the strategy asked for (buyers.py); with `--cancel-rate` and `--pay-within`, the
cancels, pays and unpaid holds after them (after_sale.py); then a wait until the stack has
settled every hold and cancel by itself, the ledger, and the invariant check (report.py), with
I10, the stock events, when the stack runs relays (its own stack does: two, as `inventory up`).
"""

from __future__ import annotations

import asyncio
import time

from rich.console import Console
from sqlalchemy import func, select

from inventory.check import run_check
from inventory.check.events_source import check_stack_events, relays_of
from inventory.loadtest.buyers import Attempt, LoadConfig, LoadResult, drive, plan_orders
from inventory.loadtest.report import print_summary, print_violations, write_report
from inventory.local.stack_state import StackState
from order_service.core.statuses import AWAITING_PAYMENT, CANCELLING, PENDING
from order_service.storage.tables import order_details, orders
from shared.database.engines import make_engine, utcnow

__all__ = [
    "Attempt",
    "LoadConfig",
    "LoadResult",
    "drive",
    "plan_orders",
    "print_summary",
    "print_violations",
    "run_loadtest",
    "write_report",
]
SETTLE_MARGIN = 120.0  # seconds past the holds' deadline the stack may take to settle


def run_loadtest(
    state: StackState, config: LoadConfig, console: Console | None = None
) -> LoadResult:
    result = asyncio.run(drive(state, config, console))
    if config.pay_within or config.cancel_rate:
        result.settled_s = wait_until_settled(state, result.prefix, config, console)
    result.checks = run_check(
        state.order_database_url, state.stock_database_url, goods_prefix=result.prefix
    )
    if relays_of(state):
        # After the other checks: the relay has had their time to send the run's last events.
        result.checks.append(check_stack_events(state, result.prefix))
    result.ledger = ledger(result)
    return result


def unsettled(state: StackState, prefix: str) -> int:
    """Orders of the run still PENDING, CANCELLING, or held past their deadline."""
    mine = select(order_details.c.order_id).where(order_details.c.goods_id.like(f"{prefix}%"))
    engine = make_engine(state.order_database_url)
    try:
        with engine.connect() as conn:
            open_ = orders.c.status.in_((PENDING, CANCELLING)) | (
                (orders.c.status == AWAITING_PAYMENT) & (orders.c.pay_deadline <= utcnow())
            )
            query = select(func.count()).select_from(orders).where(open_, orders.c.id.in_(mine))
            return int(conn.execute(query).scalar_one())
    finally:
        engine.dispose()


def wait_until_settled(
    state: StackState, prefix: str, config: LoadConfig, console: Console | None
) -> float | None:
    """Watch (never act) until the stack's reconcilers have expired every unpaid hold and
    finished every cancel; None past the bound (the check then says what is left)."""
    started = time.monotonic()
    bound = (config.pay_within or 0) + SETTLE_MARGIN
    if console is not None:
        console.print(
            f"waiting for the stack to settle the holds and cancels (up to {bound:.0f} s)"
        )
    while time.monotonic() - started < bound:
        if not unsettled(state, prefix):
            return time.monotonic() - started
        time.sleep(1.0)
    return None


def ledger(result: LoadResult) -> dict[str, int]:
    """seeded + restocked - final = deducted - returned, over the run's goods, from the check's
    numbers (its `adjusted`: the adjustments after each goods id's seed, the restocks)."""
    levels = next(c for c in result.checks if c.invariant == "I1" and "returns" in c.name)
    deducted, returned = int(levels.numbers["flows"]), int(levels.numbers["returned"])
    seeded = result.config.goods * result.config.stock
    restocked = int(levels.numbers.get("adjusted", 0))
    return {
        "seeded": seeded,
        "restocked": restocked,
        "final": seeded + restocked - int(levels.numbers["deducted"]),
        "deducted": deducted,
        "returned": returned,
    }
