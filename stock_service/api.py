"""The stock service's HTTP routes: parse and validate, call one step, shape the answer."""

from __future__ import annotations

import logging
from typing import Any

from flask import Blueprint, Response, current_app, jsonify, request

from shared.admin import require_admin
from shared.http_errors import ApiError
from shared.locks import lock_names
from shared.logs import log_context
from shared.metrics import DEDUCTIONS
from shared.validation import identifier, json_body, merge_lines, quantity
from stock_service.deduction import Outcome, StockDeduction
from stock_service.deps import StockDeps

bp = Blueprint("stock", __name__)
log = logging.getLogger("stock_service")


def deps() -> StockDeps:
    return current_app.extensions["stock"]


def parse_lines(body: Any, max_lines: int, max_quantity: int) -> dict[str, int]:
    if not isinstance(body, list):
        raise ApiError(400, 'body must be a JSON list of {"goodsId": ..., "goodsNum": ...}')
    if not body:
        raise ApiError(400, "body must list at least one goods id")
    if len(body) > max_lines:
        raise ApiError(400, f"at most {max_lines} lines per deduction")
    pairs = []
    for i, line in enumerate(body):
        if not isinstance(line, dict):
            raise ApiError(400, f"line {i} must be an object")
        goods_id = identifier(line.get("goodsId"), f"[{i}].goodsId")
        pairs.append((goods_id, quantity(line.get("goodsNum"), f"[{i}].goodsNum", max_quantity)))
    return merge_lines(pairs, max_quantity)


def flow_json(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "flag": row["flag"],
        "goodsId": row["goods_id"],
        "num": row["num"],
        "fence": row["fence"],
        "createTime": row["created_at"].isoformat(),
    }


@bp.put("/reduceStock/<flag>")
def reduce_stock(flag: str) -> tuple[Response, int, dict[str, str]]:
    d = deps()
    identifier(flag, "flag")
    log_context(flag=flag, order_id=flag)  # the order service's flag is its order id
    lines = parse_lines(json_body(request), d.settings.max_lines, d.settings.max_quantity)
    unknown = d.store.unknown_goods(sorted(lines))
    if unknown:
        raise ApiError(404, f"unknown goods: {', '.join(unknown)}", goodsIds=unknown)
    deduction: StockDeduction = d.deduction
    result = deduction.reduce(flag, lines)
    body: dict[str, Any] = {"flag": flag, "outcome": result.outcome.value}
    log.info("reduceStock: %s", result.outcome.value)
    DEDUCTIONS.labels(result.outcome.value).inc()
    timing = {"Server-Timing": result.timings.header()}
    if result.outcome is Outcome.INSUFFICIENT:
        body["shortfalls"] = [
            {
                "goodsId": s.goods_id,
                "requested": s.requested,
                "available": s.available,
                "seedVersion": s.seed_version,
            }
            for s in result.shortfalls
        ]
        return jsonify(body), 409, timing
    if result.outcome is Outcome.DEDUCTED and result.hold is not None:
        body["lock"] = {
            "backend": d.locks.name,
            "nodes": result.hold.nodes,
            "fence": result.hold.tokens,
            "batchSize": result.hold.size,  # the requests served in the same lock hold
        }
    return jsonify(body), 200, timing


@bp.get("/stockFlow/<flag>")
def stock_flow(flag: str) -> Response:
    identifier(flag, "flag")
    return jsonify([flow_json(row) for row in deps().store.flows(flag)])


@bp.get("/stock/<goods_id>")
def get_stock(goods_id: str) -> Any:
    identifier(goods_id, "goodsId")
    row = deps().store.level(goods_id)
    if row is None:
        raise ApiError(404, f"unknown goods: {goods_id}", goodsIds=[goods_id])
    return jsonify(
        {
            "goodsId": goods_id,
            "num": row["num"],
            "seededNum": row["seeded_num"],
            "seedVersion": row["seed_version"],
            "fence": row["fence"],
        }
    )


@bp.put("/stock/<goods_id>")
def put_stock(goods_id: str) -> Any:
    d = deps()
    require_admin(d.settings.admin_token, request)
    identifier(goods_id, "goodsId")
    body = json_body(request)
    if not isinstance(body, dict):
        raise ApiError(400, 'body must be a JSON object {"num": N}')
    num = quantity(body.get("num"), "num", d.settings.max_stock_level, minimum=0)
    names = lock_names([goods_id], d.settings.lock_scope)
    with d.locks.hold(names, d.settings.lock_timeout) as lease:
        row = d.store.set_level(goods_id, num, lease)
    return jsonify({"goodsId": goods_id, "num": row["num"], "seedVersion": row["seed_version"]})


@bp.get("/healthz")
def healthz() -> tuple[Response, int]:
    checks = deps().health()
    ok = all(checks.values())
    return jsonify({"status": "ok" if ok else "degraded", "checks": checks}), 200 if ok else 503
