"""PUT /faults/{point}: arm a fault. Registered only when FAULT_INJECTION=true."""

from __future__ import annotations

from typing import Any

from apiflask import APIBlueprint, HTTPTokenAuth
from flask import Response, current_app, jsonify

from shared.faults import POINTS
from shared.web.api_app import answers
from shared.web.http_errors import ApiError
from shared.web.schemas import ADMIN_OFF, BODY_TOO_LARGE, ErrorBody
from stock_service.api.schemas import FaultArmed, FaultPath, InputModels


def fault_routes(models: InputModels, admin: HTTPTokenAuth) -> APIBlueprint:
    bp = APIBlueprint("faults", __name__, tag="Faults (FAULT_INJECTION=true only)")

    @bp.put("/faults/<point>")
    @bp.auth_required(admin)
    @bp.input(FaultPath, location="path")
    @bp.input(models.fault, example={"value": 2.5, "times": 1})
    @bp.doc(
        responses=answers(
            {
                200: (FaultArmed, "Armed"),
                403: ADMIN_OFF,
                404: (ErrorBody, f"Unknown fault point; one of {', '.join(POINTS)}"),
                413: BODY_TOO_LARGE,
            }
        )
    )
    def arm_fault(point: str, path_data: Any, json_data: Any) -> Response:
        """Admin: the next `times` requests that reach `point` meet the fault."""
        if point not in POINTS:
            raise ApiError(404, f"unknown fault point; one of {', '.join(POINTS)}")
        current_app.extensions["stock"].deduction.faults.arm(
            point, float(json_data.value), json_data.times
        )
        return jsonify({"point": point, "value": json_data.value, "times": json_data.times})

    return bp
