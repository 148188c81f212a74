"""PUT /faults/{point}: arm a fault. Registered only when FAULT_INJECTION=true."""

from __future__ import annotations

from flask import Blueprint, Response, current_app, jsonify, request

from shared.admin import require_admin
from shared.http_errors import ApiError
from shared.validation import json_body, quantity
from stock_service.faults import POINTS

faults_bp = Blueprint("faults", __name__)


@faults_bp.put("/faults/<point>")
def arm_fault(point: str) -> Response:
    require_admin(current_app.extensions["stock"].settings.admin_token, request)
    if point not in POINTS:
        raise ApiError(404, f"unknown fault point; one of {', '.join(POINTS)}")
    body = json_body(request)
    if not isinstance(body, dict):
        raise ApiError(400, 'body must be {"value": seconds, "times": n}')
    value = body.get("value", 0)
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value <= 120:
        raise ApiError(400, "value must be a number of seconds from 0 to 120")
    times = quantity(body.get("times", 1), "times", maximum=1000)
    current_app.extensions["stock"].deduction.faults.arm(point, float(value), times)
    return jsonify({"point": point, "value": value, "times": times})
