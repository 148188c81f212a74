"""The order service's HTTP routes. The input rules are the models of schemas.py, checked by
apiflask before a view runs; the statuses each route can answer are listed with it."""

from __future__ import annotations

from typing import Any

from apiflask import APIBlueprint
from flask import Response, current_app, jsonify

from order_service.deps import OrderDeps
from order_service.flow import OrderRequest
from order_service.schemas import (
    IdempotencyHeaders,
    OrderAnswer,
    OrderPath,
    OrderRefused,
    OrderUnavailable,
    OrderView,
    order_body_model,
)
from shared.api_app import answers
from shared.health import add_health_route
from shared.http_errors import ApiError
from shared.schemas import BODY_TOO_LARGE, ErrorBody, merge_lines
from shared.settings import Settings


def deps() -> OrderDeps:
    return current_app.extensions["orders"]


def order_routes(settings: Settings) -> APIBlueprint:
    bp = APIBlueprint("orders", __name__, tag="Orders")
    order_body = order_body_model(settings.max_lines, settings.max_quantity)

    @bp.post("/genOrder")
    @bp.input(IdempotencyHeaders, location="headers")
    @bp.input(order_body, example={"userId": "u1", "items": [{"goodsId": "sku-1", "num": 2}]})
    @bp.doc(
        responses=answers(
            {
                200: (OrderAnswer, "CONFIRMED: the stock was deducted and the flow seen"),
                202: (OrderAnswer, "PENDING: a repeat of a key whose first request still runs"),
                409: (OrderAnswer, "FAILED: insufficient stock, or the deduction not confirmed"),
                413: BODY_TOO_LARGE,
                422: (
                    OrderRefused,
                    "Unknown goods ids, a goods id whose lines sum to more than MAX_QUANTITY, "
                    "or an Idempotency-Key reused with another body",
                ),
                503: (OrderUnavailable, "A dependency is down: the order FAILED or is PENDING"),
            }
        )
    )
    def gen_order(headers_data: Any, json_data: Any) -> tuple[Response, int, dict[str, str]]:
        """Place an order: create it, write the operation flag, deduct, confirm by polling."""
        d = deps()
        lines = merge_lines(json_data.pairs(), settings.max_quantity)
        order_request = OrderRequest(json_data.userId, lines)
        answer = d.flow.place(order_request, headers_data.idempotency_key)
        return jsonify(answer.body), answer.status_code, answer.headers

    @bp.get("/orders/<orderId>")
    @bp.input(OrderPath, location="path")
    @bp.doc(
        responses=answers(
            {
                200: (OrderView, "The order"),
                404: (ErrorBody, "No such order"),
                503: (OrderUnavailable, "The order database is down"),
            }
        )
    )
    def get_order(orderId: str, path_data: Any) -> Response:
        """One order, its lines and its status."""
        order = deps().store.get(orderId)
        if order is None:
            raise ApiError(404, f"unknown order: {orderId}")
        return jsonify(order.as_json())

    add_health_route(bp, lambda: deps().health(), "the database, Redis and the stock service")
    return bp
