"""The reservation routes (POST /reservations, GET and DELETE /reservations/{reservationId}),
their answers, and genOrder's way with a reservationId (`from_reservation`, called by
api/routes.py). Every status a route can answer is listed with it."""

from __future__ import annotations

from typing import Any, NoReturn

from apiflask import APIBlueprint
from flask import Response, current_app, jsonify

from order_service.api.deps import OrderDeps
from order_service.api.reservation_schemas import (
    BadTtl,
    ReservationKeyHeaders,
    ReservationNotChanged,
    ReservationPath,
    ReservationRefusal,
    ReservationUnavailable,
    ReservationView,
    reservation_body_model,
    ttl_of,
)
from order_service.core.buyer_limits import LimitExceeded
from order_service.core.fills import BadFill, fill_of
from order_service.core.model import IdempotencyKeyReused, OrderRequest, Placement, StockRejected
from order_service.core.statuses import INSUFFICIENT_STOCK
from order_service.reservations import (
    CONSUMED,
    FAILED,
    HELD,
    PENDING,
    Reservation,
    ReservationMismatch,
    ReservationRefused,
    Reserved,
    UnknownReservation,
)
from order_service.storage.buyer_limits import counted
from shared.config.settings import Settings
from shared.web.api_app import answers
from shared.web.http_errors import ApiError
from shared.web.schemas import BODY_TOO_LARGE, ErrorBody, merge_lines

UNKNOWN = (ErrorBody, "No such reservation")
DOWN = (ReservationUnavailable, "The order database is down")


def deps() -> OrderDeps:
    return current_app.extensions["orders"]


def reservation_routes(settings: Settings) -> APIBlueprint:
    bp = APIBlueprint("reservations", __name__, tag="Reservations")
    body_model = reservation_body_model(
        settings.max_lines, settings.max_quantity, settings.reservation_ttl_max_seconds
    )

    @bp.post("/reservations")
    @bp.input(body_model, example={"items": [{"goodsId": "sku-1", "num": 2}], "ttlSeconds": 600})
    @bp.input(ReservationKeyHeaders, location="headers")
    @bp.doc(
        responses=answers(
            {
                200: (
                    ReservationView,
                    "a repeat of an Idempotency-Key whose reservation was released, expired or "
                    "consumed since (Idempotent-Replayed: true): nothing new held; a held one "
                    "past its expiresAt is expired by the repeat, its units given back",
                ),
                201: (
                    ReservationView,
                    "held: the units are deducted and held for it, until its genOrder "
                    "(reservationId) consumes it, DELETE releases it or, past expiresAt, the "
                    "elected reconciler expires it (a repeat of its Idempotency-Key answers "
                    "the same, Idempotent-Replayed: true)",
                ),
                202: (
                    ReservationView,
                    "a repeat of an Idempotency-Key whose first post has not finished: "
                    "pending, GET /reservations/{reservationId} tells how it ends",
                ),
                409: (
                    ReservationRefusal,
                    "failed: not enough stock (`shortfalls`), nothing held, final; or released "
                    "by its buyer while it was being made; or `reason` limit_held: the buyer "
                    "would hold more of `goodsId` than its maxHeld (`limit`; `had`: held "
                    "already in reservations and unpaid holds), nothing written, nothing held",
                ),
                413: BODY_TOO_LARGE,
                422: (
                    ReservationRefusal,
                    "an Idempotency-Key used before with another body; "
                    "ttlSeconds not a whole number from 1 to RESERVATION_TTL_MAX_SECONDS "
                    "(3600 at most), a goods id summed over "
                    "MAX_QUANTITY, a goods id whose lines name different locations, goods ids "
                    "or locations the stock service has not (`goodsIds`, `locations`): "
                    "nothing kept",
                ),
                503: (
                    ReservationUnavailable,
                    "A dependency is down (`dependency` names it). `state` failed: nothing "
                    "held, final; pending: unknown for now, the reconciler settles it "
                    "(GET /reservations/{reservationId} tells); none: nothing written",
                ),
            }
        )
    )
    def reserve(json_data: Any, headers_data: Any) -> Any:
        """Hold units for a cart: all or nothing, under the lock, for ttlSeconds."""
        try:
            ttl = ttl_of(json_data.ttlSeconds, settings.reservation_ttl_max_seconds)
        except BadTtl as exc:
            raise ApiError(422, str(exc), field="ttlSeconds") from exc
        lines = merge_lines(json_data.pairs(), settings.max_quantity)
        try:
            fill = fill_of("all", json_data.located())
        except BadFill as exc:
            named: dict[str, Any] = {"goodsIds": exc.goods_ids} if exc.goods_ids else {}
            raise ApiError(422, str(exc), field=exc.field, **named) from exc
        try:
            done = deps().reservations.reserve(
                json_data.userId, lines, fill, ttl, headers_data.idempotency_key
            )
        except IdempotencyKeyReused as exc:
            raise ApiError(422, str(exc), reservationId=exc.order_id) from exc
        except LimitExceeded as exc:  # maxHeld per buyer: nothing written, nothing held
            refused(exc)
        except StockRejected as exc:
            if exc.unknown_locations is not None:
                raise ApiError(422, str(exc), locations=exc.unknown_locations) from exc
            raise ApiError(422, str(exc), goodsIds=exc.unknown_goods or []) from exc
        if done.replayed:
            return replayed_answer(done.reservation)
        return reserved_answer(done)

    @bp.get("/reservations/<reservationId>")
    @bp.input(ReservationPath, location="path")
    @bp.doc(responses=answers({200: (ReservationView, "The reservation"), 404: UNKNOWN, 503: DOWN}))
    def get_reservation(reservationId: str, path_data: Any) -> Response:
        """A reservation, its state and its lines. A read changes nothing: a held reservation
        past its expiresAt is expired by the reconciler, never by a read."""
        return jsonify(_known(reservationId, deps().reservations.get).as_json())

    @bp.delete("/reservations/<reservationId>")
    @bp.input(ReservationPath, location="path")
    @bp.doc(
        responses=answers(
            {
                200: (
                    ReservationView,
                    "released: its units back exactly once (unitsReturned); a repeat answers "
                    "the same and returns nothing twice",
                ),
                404: UNKNOWN,
                409: (
                    ReservationNotChanged,
                    "Not released; `refused` says why: consumed (its order was made), expired, "
                    "failed (nothing was held)",
                ),
                503: (
                    ReservationUnavailable,
                    "released (recorded), but the stock service did not answer: the elected "
                    "reconciler gives its units back; or the order database is down",
                ),
            }
        )
    )
    def release_reservation(reservationId: str, path_data: Any) -> tuple[Response, int]:
        """Release a reservation (held, or pending while its hold is decided): its units come
        back once."""
        return released_answer(_known(reservationId, deps().reservations.release))

    return bp


def _known(reservation_id: str, action: Any) -> Any:
    try:
        return action(reservation_id)
    except UnknownReservation as exc:
        raise ApiError(404, f"unknown reservation: {reservation_id}") from exc


def reserved_answer(done: Reserved) -> tuple[Response, int]:
    r = done.reservation
    if r.state == HELD:
        return jsonify(r.as_json()), 201
    body = _about(r)
    if done.unavailable:
        outcome = {
            PENDING: "its hold is unknown for now: it is settled later",
            FAILED: "nothing is held, and nothing will be",
        }.get(r.state, f"it is {r.state}")
        body.update(dependency=done.unavailable, error=f"{done.unavailable} unavailable; {outcome}")
        return jsonify(body), 503
    if r.reason == INSUFFICIENT_STOCK:
        body.update(error="not enough stock: nothing is held", shortfalls=done.shortfalls)
    else:
        body.update(error=f"the reservation was {r.state} while it was being made")
    return jsonify(body), 409


def replayed_answer(r: Reservation) -> tuple[Response, int, dict[str, str]]:
    """A repeat of an Idempotency-Key: the reservation as it is now."""
    headers = {"Idempotent-Replayed": "true"}
    if r.state == FAILED:
        why = "not enough stock" if r.reason == INSUFFICIENT_STOCK else r.reason
        return jsonify({**_about(r), "error": f"{why}: nothing is held"}), 409, headers
    code = {HELD: 201, PENDING: 202}.get(r.state, 200)
    return jsonify(r.as_json()), code, headers


def released_answer(done: Reserved) -> tuple[Response, int]:
    r = done.reservation
    if done.refused:
        return jsonify(not_changed(r, done.refused)), 409
    if done.unavailable:
        error = (
            f"{done.unavailable} unavailable; the release is recorded: its units come back later"
        )
        return jsonify({**_about(r), "dependency": done.unavailable, "error": error}), 503
    return jsonify(r.as_json()), 200


def _about(r: Reservation) -> dict[str, Any]:
    return {"reservationId": r.id, "state": r.state, "reason": r.reason}


def not_changed(r: Reservation, code: str) -> dict[str, Any]:
    body = {**_about(r), "refused": code, "error": f"the reservation is {code}"}
    if r.state == CONSUMED:
        body["orderId"] = r.id
    return body


def from_reservation(request: OrderRequest, key: str | None) -> Placement:
    """genOrder with a reservationId (order_service/reservations/orders.py), its refusals as
    HTTP errors: unknown 404, not held 409, another request than the reservation's 422."""
    rid = request.reservation_id
    try:
        return deps().reservation_orders.place(request, key)
    except UnknownReservation as exc:
        raise ApiError(404, f"unknown reservation: {rid}", reservationId=rid) from exc
    except ReservationRefused as exc:
        body = not_changed(exc.reservation, exc.code)
        raise ApiError(409, str(exc), **{k: v for k, v in body.items() if k != "error"}) from exc
    except ReservationMismatch as exc:
        raise ApiError(422, str(exc), field=exc.field, reservationId=rid) from exc
    except IdempotencyKeyReused as exc:
        raise ApiError(422, str(exc), orderId=exc.order_id) from exc
    except LimitExceeded as exc:  # perBuyer: no order, the reservation still held
        refused(exc, reservationId=rid)


def refused(exc: LimitExceeded, **named: Any) -> NoReturn:
    """A flash-sale rule's refusal of a request of which nothing was written: 409, counted."""
    counted({"": exc.refusal})
    fields = exc.refusal.fields()
    message = str(fields.pop("error"))
    raise ApiError(409, message, **fields, **named) from exc
