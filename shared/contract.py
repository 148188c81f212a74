"""What crosses between the order service and the stock service, named once: how a deduction
ends, what the stock database decided for a flag, and how one maps to the other. Both services
and the reconciler read these names; nothing else spells them.

    PUT /reduceStock/{flag}   answers an Outcome (`outcome` of the body)
    PUT /reduceStock          many flags at once (the order service's batch): one Outcome each
    PUT /voidFlag/{flag}      answers the flag's Decided (voided now, or what it was before)
    PUT /returnStock/{flag}   answers Outcome.RETURNED or Outcome.VOIDED

A flag is decided once, by the first of these to commit (the decision's primary key orders
them): deducted (its flows written), refused (not enough stock: nothing deducted, and nothing
ever will be), voided (settled without a deduction: nothing ever will be), and a deducted flag
whose stock came back becomes returned. A line is `{"goodsId", "goodsNum"}` on reduceStock (the
article's name) and `{"goodsId", "num"}` everywhere else; inside both services a request's
lines are a dict of goods id to units.
"""

from __future__ import annotations

import enum


class Outcome(enum.StrEnum):
    DEDUCTED = "deducted"  # deducted now
    # deducted now what was on hand, the rest owed (fill=backorder, within the goods id's
    # backorder limit): the flag is decided deducted, and its line waits for units in order
    BACKORDERED = "backordered"
    DUPLICATE = "duplicate"  # deducted before, by another attempt of the same flag
    INSUFFICIENT = "insufficient"  # refused for lack of stock (now, or before): never deducted
    VOIDED = "voided"  # the flag was voided: nothing will ever be deducted for it
    CANCELLED = "cancelled"  # deducted, then its stock returned: never deducted again
    RETURNED = "returned"  # a return (PUT /returnStock): the flag's stock is back
    # Answered at the pre-filter only: the flag is neither live in Redis nor decided in the
    # stock database (Redis lost it). Nothing was done; the order service may write it again.
    UNKNOWN_FLAG = "unknown_flag"
    # The batched PUT /reduceStock only, per flag, where the single route answers an HTTP
    # status instead: goods ids with no stock row (404), a dependency down or the lock not had
    # in time (503). Nothing was written for that flag.
    UNKNOWN_GOODS = "unknown_goods"
    UNKNOWN_LOCATION = "unknown_location"  # a line names a location there is none of
    UNAVAILABLE = "unavailable"
    # The batched PUT /reduceStock only, per flag: its lock was not had within the call's
    # budget (DEDUCT_BATCH_BUDGET), or its lock's queue in the stock process was full
    # (LOCK_QUEUE_MAX). Nothing was written and its flag is still live in Redis: retryable,
    # alone on the single route or in a later batch, under the same flag.
    NOT_ATTEMPTED = "not_attempted"
    # An adjustment (POST /stock/{goodsId}/adjustments, an admin route): made; refused because
    # the level was not the one the caller expected; refused because it would go below zero,
    # or be raised above MAX_STOCK_LEVEL (returns and transfers received may leave a level
    # above it; every change that lowers or keeps such a level is still taken).
    ADJUSTED = "adjusted"
    STALE = "stale"
    BELOW_ZERO = "below_zero"
    ABOVE_MAX = "above_max"


class Decided(enum.StrEnum):
    """flag_decision.outcome: the stock database's word on a flag, final but for returned."""

    DEDUCTED = "deducted"
    REFUSED = "refused"
    VOIDED = "voided"
    RETURNED = "returned"


# What a deduction of an already decided flag is answered: one flag is one operation.
AS_DEDUCTION: dict[Decided, Outcome] = {
    Decided.DEDUCTED: Outcome.DUPLICATE,
    Decided.REFUSED: Outcome.INSUFFICIENT,
    Decided.VOIDED: Outcome.VOIDED,
    Decided.RETURNED: Outcome.CANCELLED,
}

# The order service tells the stock service how long it waits for each call's answer, in
# milliseconds from when it sent it (relative: no clock is compared between hosts); the stock
# service waits for no lock on the call's behalf past it.
CALLER_TIMEOUT_HEADER = "X-Caller-Timeout-Ms"

# Flags in one batched reduceStock (the order service sends ORDER_BATCH_MAX at most).
MAX_BATCH_FLAGS = 64

# Decisions that say nothing was deducted, and nothing ever will be.
NOTHING_DEDUCTED = frozenset({Decided.REFUSED, Decided.VOIDED})
