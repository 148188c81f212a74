"""The apps `frame_cost.py` runs under gunicorn, each answering POST /genOrder with a fixed
CONFIRMED body and doing nothing else: a bare Flask route, and the order service's frame (its
APIFlask app, the genOrder route's header and body validation, its error handlers, request ids,
metrics and the bodyless-POST rule, its answer and headers) whole or with one part left out.
What separates them is what the order service spends per request before and after its flow.

    gunicorn 'inventory.bench.frame_apps:create_app("frame")'
"""

from __future__ import annotations

from typing import Any

from apiflask import APIBlueprint
from flask import Flask, Response, jsonify, request

from order_service.api.schemas import IdempotencyHeaders, order_body_model
from shared.config.settings import Settings
from shared.metrics import install_metrics
from shared.web.api_app import make_api_app
from shared.web.http_errors import register_error_handlers
from shared.web.json_only import install_bodyless_post_rule
from shared.web.request_id import install_request_ids

# The frame's parts, each of which a variant named "frame-no-<part>" leaves out.
PARTS = ("validation", "request-ids", "metrics")
KINDS = ("bare", "frame", *(f"frame-no-{part}" for part in PARTS))
ANSWER = {"orderId": "0" * 32, "status": "CONFIRMED", "reason": None}


def create_app(kind: str = "frame") -> Flask:
    if kind == "bare":
        return _bare()
    if kind != "frame" and kind.removeprefix("frame-no-") not in PARTS:
        raise ValueError(f"unknown kind {kind!r}: one of {', '.join(KINDS)}")
    left_out = kind.removeprefix("frame-no-") if kind != "frame" else None
    settings = Settings()
    app = make_api_app("order_service", settings, "frame", "the order service's frame")
    bp = APIBlueprint("orders", __name__)
    body = order_body_model(settings.max_lines, settings.max_quantity)

    def answer(*_: Any, **__: Any) -> tuple[Response, int, dict[str, str]]:
        if left_out == "validation":
            request.get_json()  # the body is still read and parsed
        return jsonify(ANSWER), 200, {"Server-Timing": "batch;desc=1"}

    route: Any = answer
    if left_out != "validation":
        route = bp.input(body)(route)
        route = bp.input(IdempotencyHeaders, location="headers")(route)
    bp.post("/genOrder")(route)
    app.register_blueprint(bp)
    register_error_handlers(app)
    if left_out != "request-ids":
        install_request_ids(app)
    if left_out != "metrics":
        install_metrics(app, "order")
    install_bodyless_post_rule(app)
    app.get("/healthz")(lambda: {"status": "ok"})
    return app


def _bare() -> Flask:
    app = Flask("bare")

    @app.post("/genOrder")
    def gen_order() -> Response:
        request.get_json()
        return jsonify(ANSWER)

    app.get("/healthz")(lambda: {"status": "ok"})
    return app
