"""The subscriptions' routes (admin): make, list, read, delete a subscription; list its dead
letters, and replay them. The rules are the webhooks package's (`check`); the rows too."""

from __future__ import annotations

from typing import Any

from apiflask import APIBlueprint, HTTPTokenAuth
from flask import Response, current_app, jsonify

from shared.web.api_app import answers
from shared.web.http_errors import ApiError
from shared.web.schemas import ADMIN_OFF, BODY_TOO_LARGE, ErrorBody, Unavailable
from stock_service.api.subscriptions.schemas import (
    DeadLetters,
    DeadQuery,
    ReplayBody,
    Replayed,
    Subscription,
    SubscriptionBody,
    SubscriptionList,
    SubscriptionMade,
    SubscriptionPath,
)
from stock_service.webhooks import Refused, Subscriptions, check

DOWN = (Unavailable, "The stock database is down: nothing written")
UNKNOWN = (ErrorBody, "No subscription of that id")
REFUSED = (
    ErrorBody,
    "A rule broken (`field` names it): the URL (scheme, host, length, a private address), a "
    "kind, a goods id, too many goods ids, the secret's length or characters; nothing stored",
)


def subscriptions() -> Subscriptions:
    return Subscriptions(current_app.extensions["stock"].engine)


def unknown(subscription_id: str) -> ApiError:
    return ApiError(404, f"unknown subscription: {subscription_id}")


def subscription_routes(admin: HTTPTokenAuth, allow_private: bool) -> APIBlueprint:
    bp = APIBlueprint("subscriptions", __name__, tag="Webhooks")

    @bp.post("/subscriptions")
    @bp.auth_required(admin)
    @bp.input(
        SubscriptionBody,
        example={"url": "https://hooks.example.com/inventory", "kinds": ["out_of_stock"]},
    )
    @bp.doc(
        responses=answers(
            {
                201: (SubscriptionMade, "Made: its secret, told this once"),
                403: ADMIN_OFF,
                413: BODY_TOO_LARGE,
                422: REFUSED,
                503: DOWN,
            }
        )
    )
    def post_subscription(json_data: Any) -> tuple[Response, int]:
        """Admin: POST the stock events written from now on to `url`, signed with the secret
        (X-Inventory-Signature), those of `kinds` and `goodsIds` only when given."""
        kinds, goods = json_data.kinds or [], json_data.goodsIds or []
        try:
            check(json_data.url, kinds, goods, json_data.secret, allow_private)
        except Refused as refused:
            raise ApiError(422, str(refused), field=refused.field) from None
        made = subscriptions().create(json_data.url, kinds, goods, json_data.secret)
        return jsonify(made), 201

    @bp.get("/subscriptions")
    @bp.auth_required(admin)
    @bp.doc(responses=answers({200: (SubscriptionList, "Every one"), 403: ADMIN_OFF, 503: DOWN}))
    def list_subscriptions() -> Response:
        """Admin: the subscriptions (never their secrets)."""
        return jsonify({"subscriptions": subscriptions().all()})

    @bp.get("/subscriptions/<subscriptionId>")
    @bp.auth_required(admin)
    @bp.input(SubscriptionPath, location="path")
    @bp.doc(responses=answers({200: (Subscription, "It"), 403: ADMIN_OFF, 404: UNKNOWN, 503: DOWN}))
    def get_subscription(subscriptionId: str, path_data: Any) -> Response:
        """Admin: one subscription (not its secret)."""
        found = subscriptions().one(subscriptionId)
        if found is None:
            raise unknown(subscriptionId)
        return jsonify(found)

    @bp.delete("/subscriptions/<subscriptionId>")
    @bp.auth_required(admin)
    @bp.input(SubscriptionPath, location="path")
    @bp.doc(
        responses={
            204: {"description": "Deleted, with its pending and dead deliveries"},
            **answers({403: ADMIN_OFF, 404: UNKNOWN, 503: DOWN}),
        }
    )
    def delete_subscription(subscriptionId: str, path_data: Any) -> tuple[str, int]:
        """Admin: no more deliveries to it; those pending are dropped (a POST in flight may
        still arrive)."""
        if not subscriptions().delete(subscriptionId):
            raise unknown(subscriptionId)
        return "", 204

    @bp.get("/subscriptions/<subscriptionId>/failed")
    @bp.auth_required(admin)
    @bp.input(SubscriptionPath, location="path")
    @bp.input(DeadQuery, location="query")
    @bp.doc(
        responses=answers(
            {
                200: (DeadLetters, "A page of its dead letters"),
                400: (ErrorBody, "`after` or `limit` out of its range"),
                403: ADMIN_OFF,
                404: UNKNOWN,
                503: DOWN,
            }
        )
    )
    def dead_letters(subscriptionId: str, path_data: Any, query_data: Any) -> Response:
        """Admin: the events given up for this subscription (their attempts ran out, grew too
        old, or the receiver answered a 4xx), oldest first."""
        found = subscriptions().dead(subscriptionId, query_data.after, query_data.limit)
        if found is None:
            raise unknown(subscriptionId)
        last = found[-1]["eventId"] if found else query_data.after
        return jsonify({"failed": found, "next": last})

    @bp.post("/subscriptions/<subscriptionId>/failed/replay")
    @bp.auth_required(admin)
    @bp.input(SubscriptionPath, location="path")
    @bp.input(ReplayBody, example={"eventIds": [41, 42]})
    @bp.doc(
        responses=answers(
            {
                202: (Replayed, "Pending again: the deliverer sends them"),
                403: ADMIN_OFF,
                404: UNKNOWN,
                413: BODY_TOO_LARGE,
                503: DOWN,
            }
        )
    )
    def replay(subscriptionId: str, path_data: Any, json_data: Any) -> tuple[Response, int]:
        """Admin: send its dead letters again (those of `eventIds`, or all), from a first
        attempt. A replayed event may arrive after later events of its goods id: its `seq`
        says where it belongs."""
        moved = subscriptions().replay(subscriptionId, json_data.eventIds)
        if moved is None:
            raise unknown(subscriptionId)
        return jsonify({"replayed": moved}), 202

    return bp
