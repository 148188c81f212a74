"""The ledger's routes: adjustments (admin), a goods id's history, its low-stock threshold
(admin). An adjustment is made under the goods id's lock and fence, combined with the
deductions waiting for it (stock_service/deduction/steps.py: adjust)."""

from __future__ import annotations

import re
from typing import Any

from apiflask import APIBlueprint, HTTPTokenAuth
from flask import Response, current_app, jsonify

from shared.contract import Outcome
from shared.web.api_app import answers
from shared.web.http_errors import ApiError
from shared.web.schemas import (
    ADMIN_OFF,
    BODY_TOO_LARGE,
    IDENTIFIER_PATTERN,
    IDENTIFIER_RULE,
    ErrorBody,
    Unavailable,
)
from stock_service.api.deps import StockDeps
from stock_service.api.ledger_schemas import (
    MAX_POLICY_LOCATIONS,
    REASON_TEXT,
    Adjusted,
    History,
    HistoryQuery,
    Policy,
    PolicySet,
    Stale,
    ThresholdSet,
    adjustment_model,
    policy_model,
    threshold_model,
)
from stock_service.api.location_schemas import NotFound
from stock_service.api.locations import known_location
from stock_service.api.schemas import GoodsPath, UnknownGoods
from stock_service.core import REASONS, Adjustment

DOWN = (Unavailable, "A dependency is down, or the lock was not had: nothing written")
UNKNOWN = (UnknownGoods, "No stock row for this goods id: nothing written")


def deps() -> StockDeps:
    return current_app.extensions["stock"]


def known(goods_id: str) -> None:
    if deps().store.unknown_goods([goods_id]):
        raise ApiError(404, f"unknown goods: {goods_id}", goodsIds=[goods_id])


def policy_locations(given: dict[str, int] | None, max_level: int) -> dict[str, int]:
    """A policy's locations checked (422, `field: locations`, nothing written): identifiers,
    limits 0..max_level, at most MAX_POLICY_LOCATIONS, and no two names differing only in
    case, refused alike on every database (MySQL's and MariaDB's columns compare exactly,
    as PostgreSQL's and SQLite's, so the database would keep both)."""
    locations = dict(given or {})
    if len(locations) > MAX_POLICY_LOCATIONS:
        raise ApiError(
            422, f"locations: at most {MAX_POLICY_LOCATIONS} locations", field="locations"
        )
    folded: dict[str, str] = {}
    for name, n in sorted(locations.items()):
        if not re.fullmatch(IDENTIFIER_PATTERN, name):
            raise ApiError(422, f"locations: {name!r} is not {IDENTIFIER_RULE}", field="locations")
        if isinstance(n, bool) or not 0 <= n <= max_level:
            raise ApiError(
                422, f"locations: {name}'s limit must be 0..{max_level}", field="locations"
            )
        other = folded.setdefault(name.casefold(), name)
        if other != name:
            raise ApiError(
                422,
                f"locations: {other} and {name} differ only in case: name each location once",
                field="locations",
            )
    return locations


def ledger_routes(admin: HTTPTokenAuth, max_level: int) -> APIBlueprint:
    bp = APIBlueprint("ledger", __name__, tag="Ledger")

    @bp.post("/stock/<goodsId>/adjustments")
    @bp.auth_required(admin)
    @bp.input(GoodsPath, location="path")
    @bp.input(adjustment_model(max_level), example={"delta": 20, "reason": "restock"})
    @bp.doc(
        responses=answers(
            {
                201: (Adjusted, "Made: the ledger entry and the level after"),
                403: ADMIN_OFF,
                404: (
                    NotFound,
                    "No stock row for this goods id (`goodsIds`), or no such location "
                    "(`locations`): nothing written",
                ),
                409: (
                    Stale,
                    "Nothing changed: the level is not the one `expected` (stale), or the "
                    "adjustment would take it below zero, or raise the goods id's total above "
                    "MAX_STOCK_LEVEL (the cap bounds what an adjustment may raise a level to: "
                    "returns and transfers received may leave a level above it, which still "
                    "takes any adjustment that lowers it); `num` is the level now",
                ),
                413: BODY_TOO_LARGE,
                422: (
                    ErrorBody,
                    f"A reason that is not one of: {REASON_TEXT}; expected given with delta",
                ),
                503: DOWN,
            }
        )
    )
    def adjust(goodsId: str, path_data: Any, json_data: Any) -> tuple[Response, int]:
        """Admin: change a level with a reason, as a ledger entry: by a delta (a restock, a
        loss), or to an absolute level, a compare-and-swap against the level the caller saw."""
        if json_data.reason not in REASONS:
            raise ApiError(422, f"reason must be one of: {REASON_TEXT}", field="reason")
        if json_data.expected is not None and json_data.num is None:
            raise ApiError(422, "expected goes with num (a compare-and-swap)", field="expected")
        known(goodsId)
        if json_data.location is not None:
            known_location(json_data.location)
        adjustment = Adjustment(
            goodsId,
            json_data.reason,
            json_data.delta,
            json_data.num,
            json_data.expected,
            json_data.reference,
            json_data.location,
        )
        decision = deps().deduction.adjust(adjustment)
        if decision.outcome is Outcome.STALE:
            message = f"the level is {decision.level}, not {json_data.expected}: nothing changed"
            raise ApiError(409, message, num=decision.level)
        if decision.outcome is Outcome.BELOW_ZERO:
            message = f"the level {decision.level} cannot go below zero: nothing changed"
            raise ApiError(409, message, num=decision.level)
        if decision.outcome is Outcome.ABOVE_MAX:
            message = (
                f"the level {decision.level} cannot be raised above {max_level} "
                "(MAX_STOCK_LEVEL): nothing changed"
            )
            raise ApiError(409, message, num=decision.level)
        [entry] = decision.entries
        made: dict[str, Any] = {
            "seq": entry.seq,
            "kind": entry.kind,
            "delta": entry.delta,
            "levelAfter": entry.level_after,
            "reason": adjustment.reason,
            "reference": adjustment.reference,
            "time": decision.committed_at.isoformat(),
        }
        if adjustment.location is not None:
            made["location"] = adjustment.location
        return jsonify({"goodsId": goodsId, "num": entry.level_after, "entry": made}), 201

    @bp.get("/stock/<goodsId>/history")
    @bp.input(GoodsPath, location="path")
    @bp.input(HistoryQuery, location="query")
    @bp.doc(
        responses=answers(
            {
                200: (History, "A page of entries, or the level then"),
                404: UNKNOWN,
                422: (ErrorBody, "`at` is shaped as a time but is none (a 13th month)"),
                503: DOWN,
            }
        )
    )
    def history(goodsId: str, path_data: Any, query_data: Any) -> Response:
        """Why the level is what it is: every entry newest first (deductions, returns,
        adjustments), each with the level it left, in pages (`before`: the last page's `next`);
        or, with `at`, the level at that time."""
        known(goodsId)
        ledger = deps().ledger
        try:
            at = query_data.moment()
        except ValueError as exc:  # the pattern's shape, not a time (month 13, day 0)
            raise ApiError(422, f"at: not a time ({exc})", field="at") from exc
        if at is not None:
            level, _entry = ledger.level_at(goodsId, at)
            return jsonify({"goodsId": goodsId, "at": at.isoformat(), "num": level})
        page = ledger.page(goodsId, query_data.limit, query_data.before)
        more = len(page) == query_data.limit and page[-1].seq > 1
        return jsonify(
            {
                "goodsId": goodsId,
                "entries": [e.as_json() for e in page],
                "next": page[-1].seq if more else None,
            }
        )

    @bp.put("/stock/<goodsId>/policy")
    @bp.auth_required(admin)
    @bp.input(GoodsPath, location="path")
    @bp.input(policy_model(max_level), example={"backorderLimit": 20, "locations": {"north": 5}})
    @bp.doc(
        responses=answers(
            {
                200: (PolicySet, "Set: fill=backorder may owe up to these many units"),
                403: ADMIN_OFF,
                404: (NotFound, "An unknown goods id (`goodsIds`) or location (`locations`)"),
                413: BODY_TOO_LARGE,
                422: (
                    ErrorBody,
                    "A negative limit (`field`: backorderLimit); a location's limit negative "
                    "or above MAX_STOCK_LEVEL, a name that is no identifier, two names "
                    "differing only in case, too many locations (`field`: locations); nothing "
                    "written",
                ),
                503: DOWN,
            }
        )
    )
    def policy(goodsId: str, path_data: Any, json_data: Any) -> Response:
        """Admin: the goods id's backorder limit: the units it may owe at once to orders
        placed with fill=backorder, filled oldest first as units arrive; and, optionally, a
        location's: the units its lines naming that location may owe at once
        (docs/backorders.md)."""
        limit = json_data.backorderLimit
        if limit < 0:
            raise ApiError(422, "backorderLimit cannot be negative", field="backorderLimit")
        locations = policy_locations(json_data.locations, max_level)
        unknown = deps().locations.unknown(sorted(locations))
        if unknown:
            raise ApiError(404, f"unknown location: {', '.join(unknown)}", locations=unknown)
        if not deps().ledger.set_policy(goodsId, limit, locations):
            raise ApiError(404, f"unknown goods: {goodsId}", goodsIds=[goodsId])
        return jsonify({"goodsId": goodsId, "backorderLimit": limit, "locations": locations})

    @bp.get("/stock/<goodsId>/policy")
    @bp.input(GoodsPath, location="path")
    @bp.doc(responses=answers({200: (Policy, "The policy, and what is owed"), 404: UNKNOWN}))
    def get_policy(goodsId: str, path_data: Any) -> Response:
        """The goods id's backorder limit and its locations' limits, with the units owed in
        all and the units its lines naming each location still wait for there."""
        found = deps().ledger.policy(goodsId)
        if found is None:
            raise ApiError(404, f"unknown goods: {goodsId}", goodsIds=[goodsId])
        return jsonify(found)

    @bp.put("/stock/<goodsId>/threshold")
    @bp.auth_required(admin)
    @bp.input(GoodsPath, location="path")
    @bp.input(threshold_model(max_level), example={"lowStock": 10})
    @bp.doc(
        responses=answers(
            {
                200: (ThresholdSet, "Set: a level falling below it is a low_stock event"),
                403: ADMIN_OFF,
                404: UNKNOWN,
                413: BODY_TOO_LARGE,
                503: DOWN,
            }
        )
    )
    def threshold(goodsId: str, path_data: Any, json_data: Any) -> Response:
        """Admin: the goods id's low-stock threshold (null: none)."""
        if not deps().ledger.set_threshold(goodsId, json_data.lowStock):
            raise ApiError(404, f"unknown goods: {goodsId}", goodsIds=[goodsId])
        return jsonify({"goodsId": goodsId, "lowStock": json_data.lowStock})

    return bp
