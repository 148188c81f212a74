"""genOrder's, a cancel's and a pay's HTTP answers, made from the order as the write left it
(order_service/api/routes.py's routes return them)."""

from __future__ import annotations

from typing import Any

from flask import Response, jsonify

from order_service.core.buyer_limits import LimitRefusal
from order_service.core.model import Placement
from order_service.core.statuses import (
    AWAITING_PAYMENT,
    BACKORDERED,
    CANCELLED,
    CANCELLING,
    CONFIRMED,
    FAILED,
)
from order_service.placing import Outcome

# The article's field, by status; PENDING and CANCELLING are "pending". A BACKORDERED order is
# placed (its units owed are its own, in line): a success, as a hold is.
RESULT = {
    CONFIRMED: "success",
    AWAITING_PAYMENT: "success",
    BACKORDERED: "success",
    FAILED: "false",
    CANCELLED: "cancelled",
}
# genOrder's status code by the order's status: placed (held, owed or not), refused or
# cancelled meanwhile, or still unknown.
PLACED = {
    CONFIRMED: 200,
    AWAITING_PAYMENT: 200,
    BACKORDERED: 200,
    FAILED: 409,
    CANCELLING: 409,
    CANCELLED: 409,
}


def state_body(order: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "orderId": order.id,
        "status": order.status,
        "result": RESULT.get(order.status, "pending"),
    }
    if order.reason:
        body["reason"] = order.reason
    refusal = LimitRefusal.parse(order.reason)
    if refusal is not None:  # refused by a flash-sale rule per buyer: what it names
        body.update(refusal.fields())
    if getattr(order, "pay_deadline", None) is not None:
        body["payBy"] = order.pay_deadline.isoformat()
    return body


def outcome_answer(outcome: Outcome) -> tuple[Response, int]:
    """A cancel's or a pay's answer, made from the order as the write left it."""
    body = state_body(outcome.order)
    if outcome.unavailable:
        body.update(
            dependency=outcome.unavailable,
            error=f"{outcome.unavailable} unavailable; the cancel is recorded and finished later",
        )
        return jsonify(body), 503
    if outcome.refused:
        body.update(error=outcome.refused.message, refused=outcome.refused.code)
        return jsonify(body), 409
    return jsonify(body), 200


def placement_answer(placement: Placement) -> tuple[Response, int, dict[str, str]]:
    """The HTTP answer of a placement, made from the order's state as it ended: 200 CONFIRMED
    (AWAITING_PAYMENT, BACKORDERED), 409 FAILED, 202 PENDING; 503 (naming the dependency) when
    a dependency's failure decided the outcome or left it open."""
    order = placement.order
    body = state_body(order)
    if placement.shortfalls:
        body["shortfalls"] = placement.shortfalls
    body.update(placement.fields)  # an order that asked for a fill or a location
    headers = {"Idempotent-Replayed": "true"} if placement.replayed else {}
    # How many orders its batch placed together (order_service/placing/batching.py).
    if placement.batch:
        headers["Server-Timing"] = f"batch;desc={placement.batch}"
    code = PLACED.get(order.status, 202)
    if placement.unavailable and order.status not in (CONFIRMED, AWAITING_PAYMENT, BACKORDERED):
        code = 503
        body["dependency"] = placement.unavailable
        body["error"] = f"{placement.unavailable} unavailable; " + (
            "the order failed: nothing was deducted, and nothing will be"
            if order.status == FAILED
            else "the order's outcome is unknown for now: it is settled later"
        )
    return jsonify(body), code, headers
