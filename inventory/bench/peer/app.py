"""The one-database peer as a Flask app: POST /genOrder and GET /healthz, nothing else.

It takes the order service's bodies (`{"userId", "goodsIds": [...]}` or `{"userId", "items":
[{"goodsId", "num"}]}`) and its Idempotency-Key header, and answers as it does: 200 CONFIRMED,
409 FAILED with reason insufficient_stock, 422 for unknown goods ids, a key reused with another
body or a body it will not take. Checked by hand, in a few lines: no apiflask, pydantic,
request ids, metrics or per-request logging (the simplest correct thing, which is the point of
the comparison).

Under gunicorn: `inventory.bench.peer.app:create_app()`, the database in PEER_DATABASE_URL."""

from __future__ import annotations

import os
import re
from typing import Any

from flask import Flask, Response, jsonify, request

from inventory.bench.peer.store import place
from shared.database.engines import DatabaseUnavailable, make_engine
from shared.web.schemas import IDENTIFIER_PATTERN

MAX_LINES, MAX_QUANTITY = 100, 10_000  # the order service's defaults (shared/config/settings.py)
_IDENTIFIER = re.compile(IDENTIFIER_PATTERN)
_KEY = re.compile(r"^[\x20-\x7e]{1,128}$")


class BadRequest(ValueError):
    pass


def create_app(database_url: str | None = None) -> Flask:
    url = database_url or os.environ["PEER_DATABASE_URL"]
    engine = make_engine(url, application="peer")  # the project's engine tuning, as is
    app = Flask(__name__)

    @app.post("/genOrder")
    def gen_order() -> tuple[Response, int, dict[str, str]]:
        try:
            user_id, lines = parse_order(request.get_json(silent=True))
            key = request.headers.get("Idempotency-Key")
            if key is not None and not _KEY.match(key):
                raise BadRequest("Idempotency-Key: 1-128 printable characters")
        except BadRequest as exc:
            return jsonify({"error": str(exc)}), 422, {}
        try:
            outcome = place(engine, user_id, lines, key)
        except DatabaseUnavailable:
            return jsonify({"error": "database unavailable", "dependency": "database"}), 503, {}
        return jsonify(outcome.body), outcome.code, outcome.headers

    @app.get("/healthz")
    def healthz() -> Response:
        return jsonify({"status": "ok"})

    return app


def parse_order(body: Any) -> tuple[str, dict[str, int]]:
    """(user id, units by goods id, repeats summed), or BadRequest saying why."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    user_id = body.get("userId")
    if not isinstance(user_id, str) or not _IDENTIFIER.match(user_id):
        raise BadRequest("userId: 1-64 letters, digits or _ . : -")
    goods_ids, items = body.get("goodsIds"), body.get("items")
    if (goods_ids is None) == (items is None):
        raise BadRequest("give exactly one of goodsIds or items")
    pairs = (
        [(g, 1) for g in _list(goods_ids, "goodsIds")]
        if goods_ids is not None
        else [_item(item) for item in _list(items, "items")]
    )
    lines: dict[str, int] = {}
    for goods_id, num in pairs:
        if not isinstance(goods_id, str) or not _IDENTIFIER.match(goods_id):
            raise BadRequest("goodsId: 1-64 letters, digits or _ . : -")
        lines[goods_id] = lines.get(goods_id, 0) + num
        if lines[goods_id] > MAX_QUANTITY:
            raise BadRequest(f"quantity of {goods_id} exceeds {MAX_QUANTITY} (its lines summed)")
    return user_id, lines


def _list(value: Any, name: str) -> list[Any]:
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_LINES:
        raise BadRequest(f"{name}: a list of 1-{MAX_LINES}")
    return value


def _item(item: Any) -> tuple[Any, int]:
    if not isinstance(item, dict):
        raise BadRequest("items: objects with goodsId and num")
    num = item.get("num")
    if isinstance(num, float) and num.is_integer():
        num = int(num)
    if isinstance(num, bool) or not isinstance(num, int) or not 1 <= num <= MAX_QUANTITY:
        raise BadRequest(f"num: a whole number 1-{MAX_QUANTITY}")
    return item.get("goodsId"), num
