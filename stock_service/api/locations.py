"""The locations' routes (docs/locations.md): a location made or changed (admin), the list of
locations, and a goods id's level seeded at one location (admin: an adjustment of reason
`set` there, under the goods id's lock)."""

from __future__ import annotations

from typing import Any

from apiflask import APIBlueprint, HTTPTokenAuth
from flask import Response, current_app, jsonify

from shared.web.api_app import answers
from shared.web.http_errors import ApiError
from shared.web.schemas import ADMIN_OFF, BODY_TOO_LARGE, ErrorBody, Unavailable
from stock_service.api.deps import StockDeps
from stock_service.api.location_schemas import (
    LocationBody,
    LocationLevelSet,
    LocationPath,
    Locations,
    LocationView,
    StockLocationPath,
    level_model,
)
from stock_service.core import Adjustment

DOWN = (Unavailable, "A dependency is down, or the lock was not had: nothing written")
UNKNOWN_LOCATION = (ErrorBody, "No such location (`locations`: the unknown ones): nothing written")


def deps() -> StockDeps:
    return current_app.extensions["stock"]


def known_location(location_id: str) -> None:
    if deps().locations.unknown([location_id]):
        raise ApiError(404, f"unknown location: {location_id}", locations=[location_id])


def serve_waiting_lines(d: StockDeps, location_id: str) -> None:
    """Units at a location that was inactive were out of reach of the lines waiting for them:
    each goods id owing units with some there is served in a hold of its own, by an
    adjustment of 0 units at the location (a ledger line of reason `correction`, referenced
    `activated <location>`), whose plan hands what is on hand to the waiting lines in its
    commit, as a restock's does."""
    for goods_id in d.deduction.store.owing_at(location_id):
        reference = f"activated {location_id}"
        d.deduction.adjust(
            Adjustment(goods_id, "correction", delta=0, reference=reference, location=location_id)
        )


def location_routes(admin: HTTPTokenAuth, max_level: int) -> APIBlueprint:
    bp = APIBlueprint("locations", __name__, tag="Locations")

    @bp.put("/locations/<locationId>")
    @bp.auth_required(admin)
    @bp.input(LocationPath, location="path")
    @bp.input(LocationBody, example={"priority": 1, "active": True})
    @bp.doc(
        responses=answers(
            {
                200: (LocationView, "Changed"),
                201: (LocationView, "Made"),
                403: ADMIN_OFF,
                413: BODY_TOO_LARGE,
                503: DOWN,
            }
        )
    )
    def put_location(locationId: str, path_data: Any, json_data: Any) -> tuple[Response, int]:
        """Admin: a location stock is kept in, its priority in the allocation (lower first)
        and whether it may be allocated from. Active, the units it holds of goods ids that
        owe units go to their waiting lines, oldest first, before the answer (a 503 when a
        lock or the database was not had: the PUT is idempotent, and sent again it serves
        what is left)."""
        d = deps()
        new = d.locations.put(locationId, json_data.priority, json_data.active)
        if json_data.active:
            serve_waiting_lines(d, locationId)
        body = {"locationId": locationId, "priority": json_data.priority}
        return jsonify({**body, "active": json_data.active}), 201 if new else 200

    @bp.get("/locations")
    @bp.doc(responses=answers({200: (Locations, "Every location, best first"), 503: DOWN}))
    def get_locations() -> Response:
        """The locations, in the order the allocation tries them."""
        places = deps().locations.places()
        return jsonify(
            {
                "locations": [
                    {"locationId": p.location_id, "priority": p.priority, "active": p.active}
                    for p in places
                ]
            }
        )

    @bp.put("/stock/<goodsId>/locations/<locationId>")
    @bp.auth_required(admin)
    @bp.input(StockLocationPath, location="path")
    @bp.input(level_model(max_level), example={"num": 40})
    @bp.doc(
        responses=answers(
            {
                200: (LocationLevelSet, "Set: a ledger entry of reason `set` at the location"),
                403: ADMIN_OFF,
                404: UNKNOWN_LOCATION,
                409: (ErrorBody, "The goods id's level would go above MAX_STOCK_LEVEL"),
                413: BODY_TOO_LARGE,
                503: DOWN,
            }
        )
    )
    def put_stock_location(
        goodsId: str, locationId: str, path_data: Any, json_data: Any
    ) -> Response:
        """Admin: set the level of a goods id at one location (the seed there), bringing the
        goods id into being if it is new; the other locations keep theirs."""
        known_location(locationId)
        d = deps()
        setting = Adjustment(
            goodsId, "set", num=json_data.num, reference="PUT /stock/locations", location=locationId
        )
        decision = d.deduction.adjust(setting)
        if not decision.entries:
            raise ApiError(409, f"the level cannot go above {max_level}: nothing changed")
        [entry] = decision.entries
        return jsonify(
            {
                "goodsId": goodsId,
                "location": locationId,
                "num": json_data.num,
                "total": entry.level_after,
                "seq": entry.seq,
            }
        )

    return bp
