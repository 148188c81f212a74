"""Reconciliation: settle what a request could not, from the stock database's decisions.

Three kinds of orders, each read in keyset pages of `page_size`, oldest first, whatever its age
(the pass reads nothing else, so its cost is the number of orders it settles, however many
orders failed or were confirmed):

- PENDING, older than `older_than` (one request's whole budget, Settings.request_budget: the
  settings refuse less, so no request of it is still running): its request lost the stock
  service or a dependency of it (or died), and its attempts may have committed after it
  stopped polling. The stock database is asked what it decided for the flag (GET /flags):
  deducted makes it CONFIRMED (a hold: AWAITING_PAYMENT, its clock starting now; a backorder
  with a line still waiting for units: BACKORDERED), refused or voided FAILED. Undecided, the
  deduction is made again under the same flag (its flag written again, then reduceStock with
  the fill it asked for: the decision table keeps it to one deduction), so a fault
  healed since loses no sale; still undecided, it waits for the next pass, and once the order
  is older than `void_after` (RECONCILE_VOID_AFTER) its flag is voided instead: nothing was
  and nothing will be deducted, FAILED.
- CANCELLING, older than `older_than`: a cancel recorded whose stock return got no answer; the
  return is asked again (idempotent), and the order becomes CANCELLED.
- AWAITING_PAYMENT past its pay deadline: the hold expired unpaid; it is cancelled and its
  stock returned (order_service/placing/cancellation.py: the expiry and a late pay race on the
  row, and exactly one wins).
- BACKORDERED: confirmed once the stock service has filled every line of it
  (order_service/settling/backorders.py);
- reservations: pending ones settled, held ones past their expiry expired and their units
  returned, released or expired ones whose units are still owed returned
  (order_service/settling/reservations.py);
- a paid hold whose release the stock service has not acknowledged (hold_release, written by
  the pay; the pay's own call got no answer): sent again (idempotent), so GET /stock's `held`
  does not count it for ever.

An unreachable stock service leaves an order for the next pass. Each item is served alone
(order_service/settling/pages.py): one whose handling raises (a row lock held by a paused
process past DB_LOCK_TIMEOUT_MS, an answer it cannot read, a bug) is logged, counted and
skipped, the pass goes on past it, and the next pass tries it again; every page of each kind
is read, the paid holds' releases too. The pass's "now" is the order database's clock. Run by
the elected reconciler (settling/reconciler.py) every RECONCILE_INTERVAL, or by hand (`inventory
reconcile`); it is idempotent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from order_service.core.model import OrderRow
from order_service.core.statuses import (
    AWAITING_PAYMENT,
    BACKORDERED,
    CANCELLED,
    CANCELLING,
    CONFIRMED,
    FAILED,
    PENDING,
    RECONCILED,
)
from order_service.placing import (
    REJECTED,
    Cancellation,
    FlagWriter,
    Outcome,
    StockClient,
    StockDecision,
)
from order_service.reservations import ReservationStore, Settlement
from order_service.settling.backorders import BackorderReport, reconcile_backorders
from order_service.settling.pages import database_time, hold_release_page, serve_kind, serve_pages
from order_service.settling.reservations import ReservationReport, reconcile_reservations
from order_service.storage import transitions
from order_service.storage.fill_store import Confirmed
from order_service.storage.store import OrderStore
from order_service.storage.transitions import Fence
from shared.contract import Decided

log = logging.getLogger(__name__)
PAGE_SIZE = 200
# A paid hold's release is the pay's own call first; the reconciler sends those older than this.
HOLD_RELEASE_AGE = timedelta(seconds=10)


@dataclass
class ReconcileReport:
    examined: int = 0
    pages: int = 0
    confirmed: list[str] = field(default_factory=list)
    backordered: list[str] = field(default_factory=list)  # PENDING, now owing units in line
    failed: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)  # flows that are not the order's lines
    unreachable: int = 0
    retried: list[str] = field(default_factory=list)  # undecided: deducted again, still unknown
    cancelled: list[str] = field(default_factory=list)  # cancels finished, expired holds
    released: list[str] = field(default_factory=list)  # paid holds' units released
    skipped: list[str] = field(default_factory=list)  # handling raised: the next pass again
    reservations: ReservationReport = field(default_factory=ReservationReport)
    backorders: BackorderReport = field(default_factory=BackorderReport)


def reconcile(
    store: OrderStore,
    stock: StockClient,
    older_than: timedelta,
    now: datetime | None = None,
    fence: Fence | None = None,
    before_write: Callable[[], None] = lambda: None,
    page_size: int = PAGE_SIZE,
    flags: FlagWriter | None = None,
    void_after: timedelta | None = None,
) -> ReconcileReport:
    """One pass. `fence`: the elected reconciler's (epoch, leader token); every write carries
    it, and transitions.Superseded ends the pass when a newer leader has written. `flags`:
    how an undecided order's deduction is made again (None: it is voided at once); `void_after`:
    the age past which an undecided order is voided instead (None: never while it can be
    deducted again)."""
    now = now or database_time(store.engine)
    report = ReconcileReport()
    cancellation = Cancellation(store, stock)
    again = DeductAgain(stock, flags, now, void_after) if flags is not None else None

    def settle(order: OrderRow) -> None:
        settle_one(store, stock, order, report, fence, before_write, again)

    def finish_cancel(order: OrderRow) -> None:
        report.examined += 1
        before_write()
        _after_cancel(cancellation.return_stock(order.state, fence), report)

    def expire(order: OrderRow) -> None:
        report.examined += 1
        before_write()
        _after_cancel(cancellation.expire(order.id, fence), report)

    def backorders() -> None:
        report.backorders = reconcile_backorders(store, stock, now, fence, before_write, page_size)

    def reservations() -> None:
        settlement = Settlement(ReservationStore(store), stock)
        report.reservations = reconcile_reservations(
            settlement, stock, now, older_than, fence, before_write, page_size
        )

    def release(order_id: str) -> None:
        report.examined += 1
        if cancellation.release_hold(order_id):
            report.released.append(order_id)
        else:
            report.unreachable += 1

    def releases() -> None:
        serve_pages(
            "hold_releases",
            lambda after: hold_release_page(store.engine, now - HOLD_RELEASE_AGE, after, page_size),
            lambda key: key,
            lambda key: release(key[1]),
            page_size,
            report.skipped,
        )

    cut = now - older_than
    serve_kind("pending", lambda: _pages(store, PENDING, cut, page_size, report, settle))
    serve_kind(
        "cancelling", lambda: _pages(store, CANCELLING, cut, page_size, report, finish_cancel)
    )
    serve_kind(
        "awaiting_payment",
        lambda: _pages(store, AWAITING_PAYMENT, now, page_size, report, expire, by_deadline=True),
    )
    serve_kind("backordered", backorders)
    serve_kind("reservations", reservations)  # before the releases: settled first if they fail
    serve_kind("hold_releases", releases)
    return report


def _pages(
    store: OrderStore,
    status: str,
    before: datetime,
    page_size: int,
    report: ReconcileReport,
    act: Callable[[OrderRow], None],
    by_deadline: bool = False,
) -> None:
    """Every page of the orders in `status`, each order served alone (settling/pages.py)."""

    def key(order: OrderRow) -> tuple[datetime, str]:
        stamp = order.pay_deadline if by_deadline else order.created_at
        assert stamp is not None
        return stamp, order.id

    report.pages += serve_pages(
        status.lower(),
        lambda after: store.page(status, before, after, page_size, by_deadline),
        key,
        act,
        page_size,
        report.skipped,
    )


def _after_cancel(outcome: Outcome, report: ReconcileReport) -> None:
    if outcome.unavailable:
        report.unreachable += 1
    elif outcome.order.status == CANCELLED:
        report.cancelled.append(outcome.order.id)


def settle_one(
    store: OrderStore,
    stock: StockClient,
    order: OrderRow,
    report: ReconcileReport,
    fence: Fence | None,
    before_write: Callable[[], None],
    again: DeductAgain | None = None,
) -> None:
    report.examined += 1
    decision = stock.decision(order.id) if again is not None else stock.void(order.id)
    if decision is not None and decision.outcome is None and again is not None:
        decision = again.settle(order, report)
    decision = with_lines(stock, order, decision)  # the lines it owes, if its fill may owe
    if decision is None or decision.outcome is None:
        report.unreachable += decision is None
        return
    policy = order.fill.policy
    settled = policy.decided(order.lines, decision.outcome, decision.flows, decision.body)
    if settled is None:
        report.mismatched.append(order.id)  # for a person to look at; never guessed
        log.error("order %s: flows %s are not its lines", order.id, decision.deducted_lines())
        return
    before_write()
    status = settled.status
    what = decision.outcome if status != FAILED else settled.code
    if status == CONFIRMED and order.pay_within:
        status = AWAITING_PAYMENT  # a hold: paid or expired from here
    reason = f"{RECONCILED}: {what} ({order.reason or 'its request ended without an outcome'})"
    confirmed = _confirmed(order, decision) if status != FAILED else None
    moved = transitions.settle(
        store, order.id, PENDING, status, reason, fence, order.pay_within, confirmed
    )
    if moved:
        ended = {BACKORDERED: report.backordered, FAILED: report.failed}
        ended.get(status, report.confirmed).append(order.id)  # placed, or cancelled
        log.warning("order %s was PENDING; the stock database says %s: %s", order.id, what, status)


def with_lines(
    stock: StockClient, order: OrderRow, decision: StockDecision | None
) -> StockDecision | None:
    """A decision as GET /flags tells it, for an order whose fill may owe units decided
    `deducted` from a void (whose answer carries no lines owed); None: no answer."""
    if decision is None or not order.fill.policy.owes or decision.outcome != Decided.DEDUCTED:
        return decision
    if isinstance(decision.body, dict) and "decision" in decision.body:
        return decision  # GET /flags' own answer
    return stock.decision(order.id)


def _confirmed(order: OrderRow, decision: StockDecision) -> Confirmed | None:
    """What a deducted flag filled of the order, to record with its settlement: each line's
    units for an order that asked for a fill or a location (a backorder's so far), and the
    allocations; none to record for a plain order taken from `default`."""
    settled = order.fill.policy.deducted(order.lines, decision.flows, decision.body)
    if settled is None or (order.fill.plain and not settled.filled.allocations):
        return None
    return Confirmed(order.id, settled.filled, lines=not order.fill.plain)


@dataclass
class DeductAgain:
    """What the reconciler does with an order whose flag the stock database has not decided:
    deduct again under the same flag while the order is younger than `void_after`, void it
    after. Its `settle` answers the decision that came of it, or one with no outcome (still
    undecided: the next pass tries again), or None (the stock service or Redis unreachable)."""

    stock: StockClient
    flags: FlagWriter
    now: datetime
    void_after: timedelta | None

    def settle(self, order: OrderRow, report: ReconcileReport) -> StockDecision | None:
        if self.void_after is not None and order.created_at <= self.now - self.void_after:
            log.warning("order %s undecided past RECONCILE_VOID_AFTER: voided", order.id)
            return self.stock.void(order.id)
        if not self.flags.write([order.id]):
            return None
        hold = bool(order.pay_within)
        if order.fill.plain:
            answer = self.stock.reduce_stock(order.id, order.lines, hold=hold)
        else:  # as its genOrder asked: partial or backorder, the lines' locations
            answer = self.stock.reduce_stock(order.id, order.lines, hold=hold, fill=order.fill)
        if answer.outcome == REJECTED:  # its goods are unknown: nothing can be deducted
            return self.stock.void(order.id)
        decision = self.stock.decision(order.id)
        if decision is not None and decision.outcome is None:
            report.retried.append(order.id)
            log.warning("order %s: deducted again, still undecided (%s)", order.id, answer.error)
        return decision
