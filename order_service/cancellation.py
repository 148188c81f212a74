"""Cancel an order, pay a hold, expire an unpaid one: the stock comes back exactly once.

    cancel:  PENDING | CONFIRMED | AWAITING_PAYMENT --> CANCELLING --return the stock--> CANCELLED
    pay:     AWAITING_PAYMENT, before its deadline   --> CONFIRMED
    expire:  AWAITING_PAYMENT, past its deadline     --> CANCELLING --return the stock--> CANCELLED

The decision comes first and is durable: a compare-and-set moves the order to CANCELLING, and
only then is the stock service asked to return the flag's stock (PUT /returnStock). It returns
exactly what the flag deducted, once, or, if nothing was deducted yet, voids the flag (an empty
rollback, recorded, so a deduction that arrives later is refused). If the stock service cannot
be reached, the order stays CANCELLING and the elected reconciler finishes it: the call is
idempotent.

Pay and expiry race on the same row: pay moves AWAITING_PAYMENT to CONFIRMED only before the
deadline, expiry to CANCELLING only after it, each a compare-and-set on the status with its
clock's reading in the condition. Exactly one of them moves the order, and the other is told
what it became. A cancel racing the order's own genOrder request wins the same way: the request
finds the order no longer PENDING and answers what the row says.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from order_service import transitions
from order_service.model import (
    AWAITING_PAYMENT,
    CANCELLED,
    CANCELLED_BY_BUYER,
    CANCELLING,
    CONFIRMED,
    FAILED,
    HOLD_EXPIRED,
    HOLDING,
    PENDING,
    OrderState,
)
from order_service.stock_client import StockClient
from order_service.store import OrderStore

log = logging.getLogger(__name__)
STOCK_SERVICE = "stock service"


@dataclass(frozen=True)
class Outcome:
    """What a cancel, a pay or an expiry left the order in, and what to tell about it."""

    order: OrderState
    unavailable: str | None = None  # a dependency whose failure left the order CANCELLING
    refused: str | None = None  # why nothing was done (nothing to cancel, not payable)


class UnknownOrder(LookupError):
    pass


class Cancellation:
    def __init__(self, store: OrderStore, stock: StockClient) -> None:
        self.store = store
        self.stock = stock

    def cancel(self, order_id: str) -> Outcome:
        order = self.store.get(order_id)
        if order is None:
            raise UnknownOrder(order_id)
        state = order.state
        if state.status in (PENDING, *HOLDING):
            _moved, state = transitions.move(
                self.store, order_id, (PENDING, *HOLDING), CANCELLING, CANCELLED_BY_BUYER
            )
        if state.status == CANCELLING:
            return self.return_stock(state)
        if state.status == FAILED:
            return Outcome(state, refused="the order failed: nothing was deducted to return")
        return Outcome(state)  # CANCELLED already: the same answer, nothing returned twice

    def pay(self, order_id: str) -> Outcome:
        order = self.store.get(order_id)
        if order is None:
            raise UnknownOrder(order_id)
        paid, state = transitions.pay(self.store, order_id)
        if paid:
            log.info("order %s paid", order_id)
            return Outcome(state)
        if state.status == AWAITING_PAYMENT:  # the pay lost to the deadline: it expires now
            expired = self.expire(order_id)
            return Outcome(expired.order, expired.unavailable, refused="the hold expired")
        if state.status == CONFIRMED and order.paid_at is not None:
            return Outcome(state)  # paid before: the same answer
        why = {
            PENDING: "the order is not placed yet",
            CONFIRMED: "the order awaits no payment",
            FAILED: "the order failed",
        }.get(state.status, "the hold expired or the order was cancelled")
        return Outcome(state, refused=why)

    def expire(self, order_id: str, fence: int | None = None) -> Outcome:
        """An unpaid hold past its deadline: cancelled, its stock returned."""
        _moved, state = transitions.move(
            self.store, order_id, (AWAITING_PAYMENT,), CANCELLING, HOLD_EXPIRED, fence, due=True
        )
        if state.status == CANCELLING:
            return self.return_stock(state, fence)
        return Outcome(state)

    def return_stock(self, state: OrderState, fence: int | None = None) -> Outcome:
        """A CANCELLING order: its stock back (or its flag voided), then CANCELLED."""
        decision = self.stock.return_stock(state.id)
        if decision is None:
            log.warning("order %s CANCELLING: the stock service did not answer", state.id)
            return Outcome(state, unavailable=STOCK_SERVICE)
        what = "stock returned" if decision.outcome == "returned" else "nothing was deducted"
        reason = f"{state.reason or CANCELLED_BY_BUYER} ({what})"
        _moved, after = transitions.move(
            self.store, state.id, (CANCELLING,), CANCELLED, reason, fence
        )
        log.info("order %s %s: %s", state.id, after.status, reason)
        return Outcome(after)
