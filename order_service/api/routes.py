"""The order service's HTTP routes. The input rules are the models of api/schemas.py, checked by
apiflask before a view runs; the statuses each route can answer are listed with it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from apiflask import APIBlueprint
from flask import Response, current_app, jsonify

from order_service.api.answers import outcome_answer, placement_answer
from order_service.api.deps import OrderDeps
from order_service.api.reservation_schemas import OrderConflict
from order_service.api.reservations import from_reservation
from order_service.api.schemas import (
    CancelKeyHeaders,
    IdempotencyHeaders,
    OrderAnswer,
    OrderNotChanged,
    OrderPath,
    OrderRefused,
    OrderUnavailable,
    OrderView,
    order_body_model,
)
from order_service.core.fills import BadFill, fill_of
from order_service.core.model import IdempotencyKeyReused, OrderRemoved, OrderRequest, StockRejected
from order_service.placing import Outcome, UnknownOrder
from shared.config.settings import Settings
from shared.web.api_app import answers
from shared.web.health import add_health_route
from shared.web.http_errors import ApiError
from shared.web.schemas import BODY_TOO_LARGE, ErrorBody, merge_lines


def deps() -> OrderDeps:
    return current_app.extensions["orders"]


def order_routes(settings: Settings) -> APIBlueprint:
    bp = APIBlueprint("orders", __name__, tag="Orders")
    order_body = order_body_model(
        settings.max_lines, settings.max_quantity, settings.pay_within_max_seconds
    )

    @bp.post("/genOrder")
    @bp.input(IdempotencyHeaders, location="headers")
    @bp.input(order_body, example={"userId": "u1", "items": [{"goodsId": "sku-1", "num": 2}]})
    @bp.doc(
        responses=answers(
            {
                200: (
                    OrderAnswer,
                    "CONFIRMED: the stock was deducted and the flow seen (AWAITING_PAYMENT "
                    "with payWithinSeconds: deducted and held until paid). BACKORDERED "
                    "(fill=backorder): what was on hand deducted, the rest owed in line "
                    "(`backordered`, per line); CONFIRMED by the reconciler once every line "
                    "is filled",
                ),
                202: (
                    OrderAnswer,
                    "PENDING: its outcome is not known yet (GET /orders/{orderId} tells), or "
                    "a repeat of a key whose first request still runs",
                ),
                409: (
                    OrderConflict,
                    "FAILED: insufficient stock, or the flag was voided; final: nothing was or "
                    "will be deducted, whatever comes back to the shelf later. FAILED with "
                    "`reason` limit_per_buyer (the buyer's units of `goodsId` in orders not "
                    "FAILED or CANCELLED, `had`, plus this order's, past its perBuyer, `limit`) "
                    "or limit_held (a hold, payWithinSeconds, past its maxHeld): refused "
                    "before any stock call, final, the same for every repeat of its key; with "
                    "a reservationId, reason limit_per_buyer and no order, the reservation "
                    "still held. "
                    "CANCELLING/CANCELLED: cancelled while it was placed, or its key was "
                    "cancelled before (POST /cancelOrder). With a reservationId: the "
                    "reservation is not held (`refused`: consumed, released, expired, failed, "
                    "pending), no order",
                ),
                404: (
                    ErrorBody,
                    "A repeat of an Idempotency-Key whose order was rejected (unknown goods) "
                    "and removed: nothing was deducted, nothing is kept under the key (sent "
                    "again, it is placed anew); or an unknown reservationId",
                ),
                413: BODY_TOO_LARGE,
                422: (
                    OrderRefused,
                    "Unknown goods ids, a goods id whose lines sum to more than MAX_QUANTITY, "
                    "an Idempotency-Key reused with another body, a `fill` other than all, "
                    "partial and backorder, fill=backorder with payWithinSeconds (`field`: "
                    "payWithinSeconds), payWithinSeconds above PAY_WITHIN_MAX_SECONDS, a goods id "
                    "whose lines name different locations, or a location the stock service "
                    "has not (`locations` names them); with a "
                    "reservationId, lines (or a user, or fill) other than the reservation's; "
                    "nothing placed",
                ),
                503: (
                    OrderUnavailable,
                    "A dependency is down. The body's status says what became of the order: "
                    "FAILED (final: nothing was or will be deducted) or PENDING (unknown for "
                    "now: the reconciler settles it; GET /orders/{orderId} tells)",
                ),
            }
        )
    )
    def gen_order(headers_data: Any, json_data: Any) -> tuple[Response, int, dict[str, str]]:
        """Place an order: create it, write the operation flag, deduct, confirm by polling."""
        d = deps()
        lines = merge_lines(json_data.pairs(), settings.max_quantity)
        most = settings.pay_within_max_seconds
        if json_data.payWithinSeconds is not None and json_data.payWithinSeconds > most:
            raise ApiError(
                422,
                f"payWithinSeconds: at most {most} seconds (PAY_WITHIN_MAX_SECONDS)",
                field="payWithinSeconds",
            )
        try:
            hold = json_data.payWithinSeconds is not None
            fill = fill_of(json_data.fill, json_data.located(), hold)
        except BadFill as exc:
            named: dict[str, Any] = {"goodsIds": exc.goods_ids} if exc.goods_ids else {}
            raise ApiError(422, str(exc), field=exc.field, **named) from exc
        order_request = OrderRequest(
            json_data.userId, lines, json_data.payWithinSeconds, fill, json_data.reservationId
        )
        if order_request.reservation_id is not None:  # no second deduction: it was held
            return placement_answer(from_reservation(order_request, headers_data.idempotency_key))
        try:
            placement = d.flow.place(order_request, headers_data.idempotency_key)
        except IdempotencyKeyReused as exc:
            raise ApiError(422, str(exc), orderId=exc.order_id) from exc
        except OrderRemoved as exc:
            found = {"orderId": exc.order_id} if exc.order_id else {}
            raise ApiError(404, str(exc), **found) from exc
        except StockRejected as exc:
            if exc.unknown_goods is not None:
                raise ApiError(422, str(exc), goodsIds=exc.unknown_goods) from exc
            if exc.unknown_locations is not None:
                raise ApiError(422, str(exc), locations=exc.unknown_locations) from exc
            raise ApiError(400, str(exc)) from exc
        return placement_answer(placement)

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

    @bp.post("/orders/<orderId>/cancel")
    @bp.input(OrderPath, location="path")
    @bp.doc(
        responses=answers(
            {
                200: (
                    OrderAnswer,
                    "CANCELLED: its stock returned exactly once, or (cancelled before it was "
                    "deducted) its flag voided so that no deduction of it will ever be made; "
                    "a BACKORDERED order's: what it took and was handed since returned, its "
                    "lines out of the line; a repeat answers the same and returns nothing twice",
                ),
                404: (ErrorBody, "No such order"),
                409: (OrderNotChanged, "FAILED: nothing was deducted, nothing to cancel"),
                503: (
                    OrderUnavailable,
                    "CANCELLING: the cancel is recorded, the stock service did not answer; "
                    "the reconciler returns the stock (a BACKORDERED order's line keeps its "
                    "place until then)",
                ),
            }
        )
    )
    def cancel_order(orderId: str, path_data: Any) -> tuple[Response, int]:
        """Cancel an order (PENDING, CONFIRMED, AWAITING_PAYMENT or BACKORDERED): its stock
        comes back once."""
        return outcome_answer(_known(lambda: deps().cancellation.cancel(orderId)))

    @bp.post("/cancelOrder")
    @bp.input(CancelKeyHeaders, location="headers")
    @bp.doc(
        responses=answers(
            {
                200: (
                    OrderAnswer,
                    "CANCELLED: the order placed under this key, or, none yet, the key itself "
                    "(no order will be placed under it)",
                ),
                409: (OrderNotChanged, "FAILED: nothing was deducted, nothing to cancel"),
                503: (OrderUnavailable, "CANCELLING: the stock service did not answer"),
            }
        )
    )
    def cancel_by_key(headers_data: Any) -> tuple[Response, int]:
        """Cancel the order placed under an Idempotency-Key: what a buyer whose genOrder got no
        answer (a timeout) can do without knowing the order's id. The same as
        POST /orders/{orderId}/cancel once the order exists; before it exists, the key is
        cancelled (200 CANCELLED): a genOrder that arrives later under it places nothing and is
        answered 409 CANCELLED. So the buyer who asked to cancel never ends up with an order
        the cancel's answer did not announce."""
        key = headers_data.idempotency_key
        return outcome_answer(_known(lambda: deps().cancellation.cancel_by_key(key)))

    @bp.post("/orders/<orderId>/pay")
    @bp.input(OrderPath, location="path")
    @bp.doc(
        responses=answers(
            {
                200: (
                    OrderAnswer,
                    "CONFIRMED: paid before its deadline, or paid before (a repeated or "
                    "concurrent pay: idempotent)",
                ),
                404: (ErrorBody, "No such order"),
                409: (
                    OrderNotChanged,
                    "Not paid; `refused` says why: expired (the hold's time ran out: the "
                    "order is cancelled and its stock returned), cancelled, failed, "
                    "not_placed (still PENDING) or not_a_hold (awaits no payment)",
                ),
                503: (OrderUnavailable, "Expired, CANCELLING: the stock service did not answer"),
            }
        )
    )
    def pay_order(orderId: str, path_data: Any) -> tuple[Response, int]:
        """Pay a hold before its deadline. A pay and the hold's expiry race; exactly one wins,
        and the answer says which."""
        return outcome_answer(_known(lambda: deps().cancellation.pay(orderId)))

    add_health_route(bp, lambda: deps().health(), "the database, Redis and the stock service")
    return bp


def _known(action: Callable[[], Outcome]) -> Outcome:
    try:
        return action()
    except UnknownOrder as exc:
        raise ApiError(404, f"unknown order: {exc}") from exc
