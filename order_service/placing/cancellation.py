"""Cancel an order, pay a hold, expire an unpaid one: the stock comes back exactly once.

    cancel:  PENDING | CONFIRMED | AWAITING_PAYMENT | BACKORDERED --> CANCELLING
                 --return the stock--> CANCELLED
    pay:     AWAITING_PAYMENT, before its deadline   --> CONFIRMED
    expire:  AWAITING_PAYMENT, past its deadline     --> CANCELLING --return the stock--> CANCELLED

The decision comes first and is durable: a compare-and-set moves the order to CANCELLING, and
only then is the stock service asked to return the flag's stock (PUT /returnStock). It returns
exactly what the flag deducted, once, or, if nothing was deducted yet, voids the flag (an empty
rollback, recorded, so a deduction that arrives later is refused). A BACKORDERED order's flag
gives back what it took and what was handed to it since, and its lines give up their place in
line (what they still waited for is owed no more: docs/backorders.md). If the stock service cannot
be reached, the order stays CANCELLING and the elected reconciler finishes it: the call is
idempotent.

Pay and expiry race on the same row: pay moves AWAITING_PAYMENT to CONFIRMED only before the
deadline, expiry to CANCELLING only after it, each a compare-and-set on the status with the
database's clock in the condition (read in its own transaction: whichever host pays or
expires, the deadline is judged on the clock that set it, so a pay refused as expired on one
host is never paid on another). Exactly one of them moves the order, and the other is told
what it became. Pay is idempotent: a pay that finds the order paid (by itself before, or by a
concurrent click) answers paid, read from the row its own transaction left. A cancel racing
the order's own genOrder request wins the same way: the request finds the order no longer
PENDING and answers what the row says. A cancel by Idempotency-Key that comes before the order
leaves a tombstone under the key (a CANCELLED row with no lines): the genOrder that arrives
later finds it and is answered CANCELLED, deducting nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from sqlalchemy.exc import IntegrityError

from order_service.core.model import OrderState
from order_service.core.statuses import (
    AWAITING_PAYMENT,
    CANCELLABLE,
    CANCELLED,
    CANCELLED_BY_BUYER,
    CANCELLING,
    CONFIRMED,
    FAILED,
    HOLD_EXPIRED,
    PENDING,
)
from order_service.placing.client import StockClient
from order_service.storage import transitions
from order_service.storage.store import OrderStore
from order_service.storage.transitions import Fence
from shared.contract import Outcome as StockOutcome
from shared.ids import new_id

log = logging.getLogger(__name__)
STOCK_SERVICE = "stock service"
T = TypeVar("T")


@dataclass(frozen=True)
class Refusal:
    """Why nothing was done: a code a program reads, and a sentence a person reads."""

    code: str  # expired, cancelled, failed, not_placed, not_a_hold
    message: str


@dataclass(frozen=True)
class Outcome:
    """What a cancel, a pay or an expiry left the order in, and what to tell about it."""

    order: OrderState
    unavailable: str | None = None  # a dependency whose failure left the order CANCELLING
    refused: Refusal | None = None  # why nothing was done (nothing to cancel, not payable)


class UnknownOrder(LookupError):
    pass


NOTHING_TO_CANCEL = Refusal("failed", "the order failed: nothing was deducted to return")
EXPIRED = Refusal("expired", "the hold expired")


def _not_payable(state: OrderState) -> Refusal:
    """Why an order that is neither payable nor paid was not paid."""
    if state.status in (CANCELLING, CANCELLED):
        if (state.reason or "").startswith(HOLD_EXPIRED):
            return EXPIRED
        return Refusal("cancelled", "the order was cancelled")
    if state.status == PENDING:
        return Refusal("not_placed", "the order is not placed yet")
    if state.status == FAILED:
        return Refusal("failed", "the order failed")
    return Refusal("not_a_hold", "the order awaits no payment")


class Cancellation:
    def __init__(self, store: OrderStore, stock: StockClient) -> None:
        self.store = store
        self.stock = stock

    def cancel(self, order_id: str) -> Outcome:
        order = self.store.get(order_id)
        if order is None:
            raise UnknownOrder(order_id)
        state = order.state
        if state.status in CANCELLABLE:
            _moved, state = _known(
                order_id,
                lambda: transitions.move(
                    self.store, order_id, CANCELLABLE, CANCELLING, CANCELLED_BY_BUYER
                ),
            )
        if state.status == CANCELLING:
            return self.return_stock(state)
        if state.status == FAILED:
            return Outcome(state, refused=NOTHING_TO_CANCEL)
        return Outcome(state)  # CANCELLED already: the same answer, nothing returned twice

    def cancel_by_key(self, key: str) -> Outcome:
        """Cancel the order placed under an Idempotency-Key; none yet: a tombstone, so none
        ever will be (the unique key orders the tombstone against the genOrder's insert)."""
        order = self.store.by_idempotency_key(key)
        if order is None:
            try:
                state = transitions.tombstone(self.store, new_id(), key)
            except IntegrityError:  # the genOrder inserted first: cancel that order
                order = self.store.by_idempotency_key(key)
                if order is None:
                    raise
            else:
                log.info("key %s cancelled before any order: tombstone %s", key, state.id)
                return Outcome(state)
        return self.cancel(order.id)

    def pay(self, order_id: str) -> Outcome:
        paid, state = _known(order_id, lambda: transitions.pay(self.store, order_id))
        if paid:
            log.info("order %s paid", order_id)
            self.release_hold(order_id)
            return Outcome(state)
        if state.status == CONFIRMED and state.paid_at is not None:
            return Outcome(state)  # paid before, or by a concurrent click: paid
        if state.status == AWAITING_PAYMENT:  # the pay lost to the deadline: it expires now
            expired = self.expire(order_id)
            if expired.order.status == CONFIRMED and expired.order.paid_at is not None:
                return Outcome(expired.order)  # a concurrent pay won after all
            return Outcome(expired.order, expired.unavailable, refused=EXPIRED)
        return Outcome(state, refused=_not_payable(state))

    def release_hold(self, order_id: str) -> bool:
        """A paid hold's units are no longer held: the stock service told, and the order
        database's note of it (hold_release, written by the pay) removed. No answer: the
        elected reconciler tells it later."""
        if not self.stock.release_hold(order_id):
            return False
        transitions.hold_released(self.store, order_id)
        return True

    def expire(self, order_id: str, fence: Fence | None = None) -> Outcome:
        """An unpaid hold past its deadline: cancelled, its stock returned."""
        _moved, state = transitions.move(
            self.store, order_id, (AWAITING_PAYMENT,), CANCELLING, HOLD_EXPIRED, fence, due=True
        )
        if state.status == CANCELLING:
            return self.return_stock(state, fence)
        return Outcome(state)

    def return_stock(self, state: OrderState, fence: Fence | None = None) -> Outcome:
        """A CANCELLING order: its stock back (or its flag voided), then CANCELLED."""
        decision = self.stock.return_stock(state.id)
        if decision is None:
            log.warning("order %s CANCELLING: the stock service did not answer", state.id)
            return Outcome(state, unavailable=STOCK_SERVICE)
        returned = decision.outcome == StockOutcome.RETURNED
        what = "stock returned" if returned else "nothing was deducted"
        reason = f"{state.reason or CANCELLED_BY_BUYER} ({what})"
        _moved, after = _known(
            state.id,
            lambda: transitions.move(self.store, state.id, (CANCELLING,), CANCELLED, reason, fence),
        )
        log.info("order %s %s: %s", state.id, after.status, reason)
        return Outcome(after)


def _known(order_id: str, write: Callable[[], T]) -> T:
    """A write whose order is gone (a genOrder rejected for unknown goods removed it while
    its PENDING row was being cancelled) answers as an unknown order, not an error."""
    try:
        return write()
    except LookupError as exc:
        raise UnknownOrder(order_id) from exc
