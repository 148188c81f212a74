"""The elected reconciler's work on BACKORDERED orders (settling/reconcile.py runs it in each
pass, after the PENDING, CANCELLING and unpaid orders).

A BACKORDERED order was placed with fill=backorder: its flag is decided `deducted`, what was on
hand taken and the rest owed, its lines waiting in the stock service's line for units of their
goods ids. The stock service hands arriving units to the oldest waiting line first, in the
commit of their arrival (docs/backorders.md); it does not call the order service. So each pass
asks, for every BACKORDERED order, oldest first in keyset pages, what GET /flags/{flag} says of
its lines (`backorders`: wanted, filled, state):

- every line `filled`: the order moves BACKORDERED -> CONFIRMED by a compare-and-set on its
  status, carrying the leader's fence (transitions.move), each line's units (all of it: its
  flow, what was on hand when placed, and what it was handed since) recorded in the same
  transaction (order_details.filled). A cancel that moved it to CANCELLING first wins: the
  compare-and-set finds it moved and nothing is written;
- some line still waiting, handed units since the pass last looked: BACKORDERED -> BACKORDERED,
  the same compare-and-set, with the units each line has had so far (so GET /orders/{orderId}
  tells what it still owes); nothing handed: nothing written;
- what does not add up to its lines: for a person to look at, never guessed; no answer: the
  next pass asks again;
- an order whose handling raises (its row locked by a paused process past
  DB_LOCK_TIMEOUT_MS, a stock answer it cannot read): logged, counted and skipped, the pass
  goes on to the orders behind it, and the next pass tries it again
  (order_service/settling/pages.py).

**Bound**: an order whose last line is filled is CONFIRMED by the next pass, within
RECONCILE_INTERVAL (30 s by default) and the pass's own time, while a reconciler leads and the
stock service answers (a new leader's election adds its takeover, the lock service's session
timeout). The pass asks one GET /flags per BACKORDERED order, so its cost is the orders that
owe units: at most what the goods ids' backorder limits allow.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime

from order_service.core.fills import Settled
from order_service.core.model import OrderRow
from order_service.core.statuses import BACKORDER_FILLED, BACKORDERED, CONFIRMED
from order_service.placing import StockClient
from order_service.settling.pages import serve_pages
from order_service.storage import transitions
from order_service.storage.fill_store import Confirmed
from order_service.storage.store import OrderStore
from order_service.storage.transitions import Fence
from shared.contract import Decided

log = logging.getLogger(__name__)


@dataclass
class BackorderReport:
    confirmed: list[str] = field(default_factory=list)  # every line filled: CONFIRMED
    progressed: list[str] = field(default_factory=list)  # handed units, still owing some
    mismatched: list[str] = field(default_factory=list)  # lines that are not the order's
    skipped: list[str] = field(default_factory=list)  # handling raised: the next pass again
    unreachable: int = 0


def reconcile_backorders(
    store: OrderStore,
    stock: StockClient,
    now: datetime,
    fence: Fence | None = None,
    before_write: Callable[[], None] = lambda: None,
    page_size: int = 200,
) -> BackorderReport:
    """One pass over the BACKORDERED orders placed before `now` (the module's docstring)."""
    report = BackorderReport()
    serve_pages(
        "backordered",
        lambda after: store.page(BACKORDERED, now, after, page_size),
        lambda order: (order.created_at, order.id),
        lambda order: follow(store, stock, order, report, fence, before_write),
        page_size,
        report.skipped,
    )
    return report


def follow(
    store: OrderStore,
    stock: StockClient,
    order: OrderRow,
    report: BackorderReport,
    fence: Fence | None,
    before_write: Callable[[], None],
) -> None:
    """One BACKORDERED order: its flag's lines asked, and the order confirmed once every one
    is filled (or what it has had so far recorded)."""
    decision = stock.decision(order.id)
    if decision is None:
        report.unreachable += 1
        return
    if decision.outcome != Decided.DEDUCTED:  # returned: a cancel of it is under way
        return
    owing = order.fill.policy.deducted(order.lines, decision.flows, decision.body)
    if owing is None:
        report.mismatched.append(order.id)
        log.error("order %s: its flag's lines %s are not its own", order.id, decision.body)
        return
    if owing.status == BACKORDERED and dict(owing.filled.lines) == dict(order.filled):
        return  # nothing handed to it since
    before_write()
    if confirm_filled(store, order, owing, fence):
        (report.confirmed if owing.status == CONFIRMED else report.progressed).append(order.id)


def confirm_filled(store: OrderStore, order: OrderRow, owing: Settled, fence: Fence | None) -> bool:
    """BACKORDERED -> CONFIRMED (every line filled) or BACKORDERED -> BACKORDERED (some units
    handed to it), one compare-and-set from BACKORDERED with the leader's fence, each line's
    units had so far recorded in its transaction. The allocations of what it took when placed
    were recorded then; the hand-overs' are the stock service's ledger's. False: the order had
    moved on (a cancel), nothing written."""
    confirmed = owing.status == CONFIRMED
    reason = BACKORDER_FILLED if confirmed else order.reason
    had = Confirmed(order.id, replace(owing.filled, allocations=()), lines=True)
    moved, after = transitions.move(
        store, order.id, (BACKORDERED,), owing.status, reason, fence, confirmed=had
    )
    if moved and confirmed:
        log.info("order %s: every backordered line filled, CONFIRMED", order.id)
    elif not moved:
        log.info("order %s moved on before its backorder was followed: %s", order.id, after.status)
    return moved
