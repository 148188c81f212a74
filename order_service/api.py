"""The order service's HTTP routes."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, current_app, jsonify, request

from order_service.deps import OrderDeps
from order_service.flow import OrderRequest
from shared.http_errors import ApiError
from shared.settings import Settings
from shared.validation import identifier, json_body, merge_lines, quantity

bp = Blueprint("orders", __name__)
MAX_IDEMPOTENCY_KEY = 128


def deps() -> OrderDeps:
    return current_app.extensions["orders"]


def parse_order(body: Any, settings: Settings) -> OrderRequest:
    """Both of the article's body forms: goodsIds (one of each) or items with a num."""
    if not isinstance(body, dict):
        raise ApiError(400, "body must be a JSON object")
    user_id = identifier(body.get("userId"), "userId")
    has_ids, has_items = "goodsIds" in body, "items" in body
    if has_ids == has_items:
        raise ApiError(400, "give exactly one of goodsIds or items")
    entries = body["goodsIds"] if has_ids else body["items"]
    field = "goodsIds" if has_ids else "items"
    if not isinstance(entries, list) or not entries:
        raise ApiError(400, f"{field} must be a non-empty list", field=field)
    if len(entries) > settings.max_lines:
        raise ApiError(400, f"at most {settings.max_lines} {field} per order", field=field)
    pairs: list[tuple[str, int]] = []
    for i, entry in enumerate(entries):
        if has_ids:
            pairs.append((identifier(entry, f"goodsIds[{i}]"), 1))
            continue
        if not isinstance(entry, dict):
            raise ApiError(400, f"items[{i}] must be an object", field=f"items[{i}]")
        goods_id = identifier(entry.get("goodsId"), f"items[{i}].goodsId")
        pairs.append(
            (goods_id, quantity(entry.get("num"), f"items[{i}].num", settings.max_quantity))
        )
    return OrderRequest(user_id, merge_lines(pairs, settings.max_quantity))


def idempotency_key() -> str | None:
    key = request.headers.get("Idempotency-Key")
    if key is None:
        return None
    if not key or len(key) > MAX_IDEMPOTENCY_KEY or not key.isprintable():
        raise ApiError(400, f"Idempotency-Key must be 1-{MAX_IDEMPOTENCY_KEY} printable characters")
    return key


@bp.post("/genOrder")
def gen_order() -> tuple[Response, int, dict[str, str]]:
    d = deps()
    order_request = parse_order(json_body(request), d.settings)
    answer = d.flow.place(order_request, idempotency_key())
    return jsonify(answer.body), answer.status_code, answer.headers


@bp.get("/orders/<order_id>")
def get_order(order_id: str) -> Response:
    identifier(order_id, "orderId")
    order = deps().store.get(order_id)
    if order is None:
        raise ApiError(404, f"unknown order: {order_id}")
    return jsonify(order.as_json())


@bp.get("/healthz")
def healthz() -> tuple[Response, int]:
    checks = deps().health()
    ok = all(checks.values())
    return jsonify({"status": "ok" if ok else "degraded", "checks": checks}), 200 if ok else 503
