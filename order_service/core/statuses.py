"""An order's statuses and the reasons it records: the moves between them, every one a
compare-and-set on the status (order_service/storage/store.py, `move`).

    PENDING --(the stock database decided)--> CONFIRMED | FAILED
       |                                  \\-> AWAITING_PAYMENT (a hold) --pay--> CONFIRMED
       |                                  |                   \\--expired--> CANCELLING
       |                                  \\-> BACKORDERED (fill=backorder, units owed)
       |                                        --every line filled (the reconciler)--> CONFIRMED
       \\--cancel--> CANCELLING --(its stock returned, or its flag voided)--> CANCELLED
    CONFIRMED, AWAITING_PAYMENT and BACKORDERED --cancel--> CANCELLING
    (nothing) --cancel by key--> CANCELLED (a tombstone: a later genOrder under the key is
                                  answered CANCELLED)

Of two writers that race (a pay and an expiry, a request and the reconciler), exactly one
moves the order, and the other is told what the order became.
"""

from __future__ import annotations

PENDING, CONFIRMED, FAILED = "PENDING", "CONFIRMED", "FAILED"
AWAITING_PAYMENT = "AWAITING_PAYMENT"  # deducted and held, until paid or expired
CANCELLING = "CANCELLING"  # a cancel decided; its stock is being returned
CANCELLED = "CANCELLED"  # its stock returned (or its flag voided: nothing was deducted)
# Placed with fill=backorder: what was on hand taken, the rest owed, its lines waiting in line
# for units (docs/backorders.md); CONFIRMED once every line is filled (order_service/
# settling/backorders.py). Its flows are only what was on hand: the rest comes as the stock
# service's hand-overs (backorder_filled), so it is in neither HOLDING nor PENDING.
BACKORDERED = "BACKORDERED"
# The orders holding stock, whose cancel returns it (their flows are their lines).
HOLDING = (CONFIRMED, AWAITING_PAYMENT)
# The orders a cancel moves to CANCELLING (a BACKORDERED one gives back what it took and was
# handed, and gives up its place in line).
CANCELLABLE = (PENDING, *HOLDING, BACKORDERED)

# The reasons an order records, each a code, then ": " and a detail where there is one. A
# FAILED order's reason is one of the first three: each is a decision of the stock database
# (or no stock call at all), so no FAILED order can ever get flows.
INSUFFICIENT_STOCK = "insufficient_stock"  # refused for lack of stock (exactly this text)
VOIDED = "voided"  # the stock service could not be reached, then the flag was voided
REDIS_UNAVAILABLE = "redis_unavailable"  # no flag written, no stock call made
REJECTED = "rejected"  # the stock service refused the request itself (unknown goods)
# Refused by a flash-sale rule per buyer in the transaction that created it, no flag, no
# stock call (order_service/core/buyer_limits.py: `limit_per_buyer: goodsId=.. limit=.. had=..`,
# or `limit_held: ...`): no stock call at all, so it too can never get flows.
LIMIT_PER_BUYER, LIMIT_HELD = "limit_per_buyer", "limit_held"
OUTCOME_UNKNOWN = "outcome_unknown"  # PENDING: the reconciler settles it
RECONCILED = "reconciled"  # settled by the reconciler from the stock database's decision
CANCELLED_BY_BUYER = "cancelled: by the buyer"
HOLD_EXPIRED = "cancelled: the hold expired unpaid"
# A cancel by Idempotency-Key that came before its order: a tombstone under the key, so the
# genOrder that arrives later is answered CANCELLED and deducts nothing.
CANCELLED_BEFORE_PLACED = "cancelled: by the buyer, before the order was placed"
# A BACKORDERED order confirmed by the elected reconciler: every line filled.
BACKORDER_FILLED = "backorder_filled: every line filled"


def deducted_status(pay_within: int | None) -> str:
    """The status of an order once its stock is deducted: a hold awaits payment."""
    return AWAITING_PAYMENT if pay_within else CONFIRMED
