"""The transfers' routes (docs/locations.md): units of a goods id sent from one location
(the out leg, in transit from then), received at the other or cancelled back (the in leg).
Each step runs under the goods id's lock and fence, combined with the deductions waiting for
it (stock_service/core/transfers.py decides it); each leg is written once."""

from __future__ import annotations

import hashlib
from typing import Any

from apiflask import APIBlueprint, HTTPTokenAuth
from flask import Response, current_app, jsonify
from pydantic import BaseModel

from shared.contract import Outcome
from shared.web.api_app import answers
from shared.web.http_errors import ApiError
from shared.web.schemas import ADMIN_OFF, BODY_TOO_LARGE, ErrorBody, Unavailable
from stock_service.api.deps import StockDeps
from stock_service.api.location_schemas import NotFound, TransferPath, TransferView, transfer_model
from stock_service.api.locations import known_location
from stock_service.core import Transfer, TransferLeg

DOWN = (Unavailable, "A dependency is down, or the lock was not had: nothing written")
STEP_DOC: dict[int, tuple[type[BaseModel] | None, str]] = {
    200: (TransferView, "The transfer after this step (or as it was: the step was taken before)"),
    403: ADMIN_OFF,
    404: (ErrorBody, "No such transfer"),
    409: (ErrorBody, "The transfer took the other way (received, or cancelled): nothing moved"),
    503: DOWN,
}


def deps() -> StockDeps:
    return current_app.extensions["stock"]


def transfer_id(reference: str) -> str:
    """A transfer's id, made from its reference: a repeated POST names the same transfer."""
    return "t" + hashlib.sha256(reference.encode()).hexdigest()[:31]


def view(t: Transfer) -> dict[str, Any]:
    return {
        "transferId": t.transfer_id,
        "goodsId": t.goods_id,
        "from": t.source,
        "to": t.target,
        "units": t.units,
        "reference": t.reference,
        "state": t.state,
    }


def transfer_routes(admin: HTTPTokenAuth, max_level: int) -> APIBlueprint:
    bp = APIBlueprint("transfers", __name__, tag="Transfers")

    @bp.post("/transfers")
    @bp.auth_required(admin)
    @bp.input(
        transfer_model(max_level),
        example={
            "goodsId": "sku-1",
            "from": "north",
            "to": "south",
            "units": 5,
            "reference": "T-1",
        },
    )
    @bp.doc(
        responses=answers(
            {
                201: (TransferView, "Sent: the units left `from` and are in transit"),
                200: (TransferView, "Sent before with this reference: nothing moved again"),
                403: ADMIN_OFF,
                404: (NotFound, "No such goods id or location: nothing written"),
                409: (
                    ErrorBody,
                    "`from` has fewer units than that, or the reference names another "
                    "transfer: nothing moved",
                ),
                413: BODY_TOO_LARGE,
                422: (ErrorBody, "`from` and `to` are the same location"),
                503: DOWN,
            }
        )
    )
    def send(json_data: Any) -> tuple[Response, int]:
        """Admin: send units of a goods id from one location to another."""
        d = deps()
        goods_id, source, target = json_data.goodsId, json_data.from_, json_data.to
        if source == target:
            raise ApiError(422, "from and to are the same location", field="to")
        if d.store.unknown_goods([goods_id]):
            raise ApiError(404, f"unknown goods: {goods_id}", goodsIds=[goods_id])
        for location in (source, target):
            known_location(location)
        leg = TransferLeg(
            transfer_id(json_data.reference),
            "out",
            goods_id,
            source,
            target,
            json_data.units,
            json_data.reference,
        )
        decision = d.deduction.transfer(leg)
        if decision.outcome is Outcome.BELOW_ZERO:
            message = f"{source} has {decision.level} units of {goods_id}, fewer than {leg.units}"
            raise ApiError(409, f"{message}: nothing moved", num=decision.level)
        found = d.locations.transfer(leg.transfer_id)
        assert found is not None, "a transfer sent, or sent before, has its row"
        if decision.outcome is Outcome.ADJUSTED:
            return jsonify(view(found)), 201
        same = (found.goods_id, found.source, found.target, found.units)
        if same != (goods_id, source, target, leg.units):
            raise ApiError(409, f"reference {leg.reference!r} names another transfer")
        return jsonify(view(found)), 200

    @bp.get("/transfers/<transferId>")
    @bp.input(TransferPath, location="path")
    @bp.doc(responses=answers({200: (TransferView, "The transfer"), 404: STEP_DOC[404]}))
    def get_transfer(transferId: str, path_data: Any) -> Response:
        """A transfer and its state."""
        return jsonify(view(_found(transferId)))

    def step(transferId: str, name: str) -> Response:
        found = _found(transferId)
        leg = TransferLeg(
            found.transfer_id,
            name,
            found.goods_id,
            found.source,
            found.target,
            found.units,
            found.reference,
        )
        decision = deps().deduction.transfer(leg)
        if decision.outcome is Outcome.STALE:
            raise ApiError(409, f"the transfer was {decision.transfer}: nothing moved")
        return jsonify(view(_found(transferId)))

    @bp.post("/transfers/<transferId>/receive")
    @bp.auth_required(admin)
    @bp.input(TransferPath, location="path")
    @bp.doc(responses=answers(STEP_DOC))
    def receive(transferId: str, path_data: Any) -> Response:
        """Admin: the units arrived: they are in `to` (once, whatever the retries)."""
        return step(transferId, "receive")

    @bp.post("/transfers/<transferId>/cancel")
    @bp.auth_required(admin)
    @bp.input(TransferPath, location="path")
    @bp.doc(responses=answers(STEP_DOC))
    def cancel(transferId: str, path_data: Any) -> Response:
        """Admin: the transfer is called off in transit: its units are back in `from`."""
        return step(transferId, "cancel")

    return bp


def _found(transfer_id: str) -> Transfer:
    found = deps().locations.transfer(transfer_id)
    if found is None:
        raise ApiError(404, f"unknown transfer: {transfer_id}")
    return found
