"""The stock service's HTTP routes: validated by apiflask against the models of schemas.py,
then one step each; every status a route can answer is listed with it. Below them, how the
answers carry the service's rows: a flow (or return) row, the shortfalls of a refusal, one
flag's result in a batched reduceStock. The JSON names are the API's (goodsId, num,
createTime); the columns' are the database's."""

from __future__ import annotations

import logging
from typing import Any

from apiflask import APIBlueprint, HTTPTokenAuth
from flask import Response, current_app, jsonify

from shared.errors import DependencyUnavailable
from shared.logs import log_context
from shared.metrics import DEDUCTIONS
from shared.web.api_app import answers
from shared.web.health import add_health_route
from shared.web.http_errors import ApiError
from shared.web.schemas import ADMIN_OFF, BODY_TOO_LARGE, ErrorBody
from stock_service.api.deps import StockDeps
from stock_service.api.location_schemas import NotFound
from stock_service.api.schemas import (
    BatchDeduction,
    Deduction,
    FlagPath,
    Flows,
    GoodsPath,
    HoldQuery,
    InputModels,
    LevelSet,
    StockLevel,
    UnknownGoods,
)
from stock_service.api.waits import DOWN, install_waits
from stock_service.api.wants import check_locations, deduction_request, unknown_locations
from stock_service.core import Adjustment
from stock_service.deduction import NotAttempted, Outcome, StockDeduction

log = logging.getLogger("stock_service")
# The routes the order service and the reconcilers call (STOCK_SERVICE_TOKEN guards them).
SERVICE_ROUTES = (
    "/reduceStock",
    "/voidFlag/",
    "/returnStock/",
    "/stockFlow/",
    "/holds/",
    "/flags/",
)
NOT_DEDUCTED = (Outcome.INSUFFICIENT, Outcome.VOIDED, Outcome.CANCELLED, Outcome.UNKNOWN_FLAG)


def deps() -> StockDeps:
    return current_app.extensions["stock"]


def stock_routes(models: InputModels, admin: HTTPTokenAuth) -> APIBlueprint:
    bp = APIBlueprint("stock", __name__, tag="Stock")
    install_waits(bp)

    @bp.put("/reduceStock/<flag>")
    @bp.input(FlagPath, location="path")
    @bp.input(HoldQuery, location="query")
    @bp.input(models.lines, example=[{"goodsId": "sku-1", "goodsNum": 2}])
    @bp.doc(
        responses=answers(
            {
                200: (
                    Deduction,
                    "deducted now; backordered (fill=backorder): what was on hand deducted, "
                    "the rest owed in line (`backordered`); or duplicate: the stock database "
                    "says this flag was "
                    "deducted before (by another attempt)",
                ),
                404: (
                    NotFound,
                    "Goods ids with no stock row, or an unknown location: nothing written",
                ),
                409: (
                    Deduction,
                    "Nothing deducted. insufficient: refused for lack of stock, now (with the "
                    "shortfalls) or before; the refusal is recorded, so no attempt of this "
                    "flag will ever deduct; voided: the flag was voided, nothing will ever be "
                    "deducted for it; cancelled: it was deducted and its stock returned; "
                    "unknown_flag: the flag is neither live in Redis nor decided in the stock "
                    "database (Redis lost it, or it expired): write it again to retry",
                ),
                413: BODY_TOO_LARGE,
                422: (
                    NotFound,
                    "A goods id's lines sum to more than MAX_QUANTITY (`goodsIds`), or name "
                    "different locations; a fill that is neither all nor partial",
                ),
                503: DOWN,
            }
        )
    )
    def reduce_stock(
        flag: str, path_data: Any, query_data: Any, json_data: Any
    ) -> tuple[Response, int, Any]:
        """Deduct the lines once for this flag (the operation flag the order service wrote):
        deduped through Redis and the stock flow, under the lock of each goods id."""
        d = deps()
        log_context(flag=flag, order_id=flag)  # the order service's flag is its order id
        request = deduction_request(
            flag,
            json_data.pairs(),
            json_data.places(),
            query_data.hold,
            query_data.fill,
            d.settings.max_quantity,
        )
        unknown = d.store.unknown_goods(sorted(request.lines))
        if unknown:
            raise ApiError(404, f"unknown goods: {', '.join(unknown)}", goodsIds=unknown)
        check_locations(d.locations, [request])
        deduction: StockDeduction = d.deduction
        result = deduction.reduce(request)
        body: dict[str, Any] = {"flag": flag, "outcome": result.outcome.value}
        # The hold's own line (deduction/steps.py) tells what its batch did; a request's line only
        # when it was not a plain deduction.
        level = logging.DEBUG if result.outcome is Outcome.DEDUCTED else logging.INFO
        log.log(level, "reduceStock: %s", result.outcome.value)
        DEDUCTIONS.labels(result.outcome.value).inc()
        timing = {"Server-Timing": result.timings.header()}
        if result.shortfalls:  # a refusal's, or what a partial fill did not fill
            body["shortfalls"] = shortfalls_json(result)
        if result.outcome in NOT_DEDUCTED:
            return jsonify(body), 409, timing
        if result.outcome in (Outcome.DEDUCTED, Outcome.BACKORDERED):
            # The committed rows, as GET /stockFlow/{flag} would return them: the order
            # service confirms from them instead of reading them back.
            body["flows"] = [flow_json(row) for row in result.flows]
            body["allocations"] = allocations_json(result.allocations)
        if result.backordered:
            body["backordered"] = owed_json(result.backordered)
        if result.outcome is Outcome.DEDUCTED and result.hold is not None:
            body["lock"] = {
                "backend": d.locks.name,
                "nodes": result.hold.nodes,
                "fence": result.hold.tokens,
                "batchSize": result.hold.size,  # the requests served in the same lock hold
            }
        return jsonify(body), 200, timing

    @bp.put("/reduceStock")
    @bp.input(
        models.batch,
        example={"flags": [{"flag": "o-1", "lines": [{"goodsId": "sku-1", "goodsNum": 2}]}]},
    )
    @bp.doc(
        responses=answers(
            {
                200: (
                    BatchDeduction,
                    "One result per flag, in the order sent, each what PUT /reduceStock/{flag} "
                    "would answer for it alone (unknown_goods, unknown_location and "
                    "unavailable in place of its 404s and 503), within DEDUCT_BATCH_BUDGET: "
                    "a flag whose lock is not had by then is not_attempted (retryable)",
                ),
                413: BODY_TOO_LARGE,
                422: (
                    ErrorBody,
                    "A flag sent twice, a line summed over MAX_QUANTITY, a fill that is "
                    "neither all nor partial, a goods id's lines naming different locations",
                ),
                503: DOWN,
            }
        )
    )
    def reduce_stock_batch(json_data: Any) -> tuple[Response, int, Any]:
        """Many flags in one call (the order service's batch of orders): each deducted once,
        deduped and locked as if it had come alone, served in one lock claim and one commit
        where their locks allow, each answered within the call's budget."""
        d = deps()
        limit = d.settings.max_quantity
        wanted = [
            deduction_request(f.flag, f.pairs(), f.places(), f.hold, f.fill, limit)
            for f in json_data.flags
        ]
        flags = [request.flag for request in wanted]
        if len(set(flags)) != len(flags):
            raise ApiError(422, "a flag is sent twice: one flag is one operation")
        # Unknown goods ids and locations are each flag's own: answered for it alone (the
        # single route's 404), never refusing its neighbours.
        unknown = set(d.store.unknown_goods(sorted({g for r in wanted for g in r.lines})))
        nowhere = set(unknown_locations(d.locations, wanted))
        known = [
            r
            for r in wanted
            if not unknown & r.lines.keys() and not nowhere & set(r.locations.values())
        ]
        decided = iter(d.deduction.reduce_many(known, d.settings.deduct_batch_budget))
        results = []
        for request in wanted:
            missing = sorted(unknown & request.lines.keys())
            places = sorted(nowhere & set(request.locations.values()))
            if missing:
                results.append(
                    {"flag": request.flag, "outcome": Outcome.UNKNOWN_GOODS, "goodsIds": missing}
                )
            elif places:
                results.append(
                    {"flag": request.flag, "outcome": Outcome.UNKNOWN_LOCATION, "locations": places}
                )
            else:
                results.append(flag_result(request.flag, next(decided), d.locks.name))
        timing = {"Server-Timing": f"flags;desc={len(flags)}"}
        return jsonify({"results": results}), 200, timing

    @bp.get("/stockFlow/<flag>")
    @bp.input(FlagPath, location="path")
    @bp.doc(responses=answers({200: (Flows, "The flows of this flag"), 503: DOWN}))
    def stock_flow(flag: str, path_data: Any) -> Response:
        """What the order service polls to confirm a deduction."""
        return jsonify([flow_json(row) for row in deps().store.flows(flag)])

    @bp.get("/stock/<goodsId>")
    @bp.input(GoodsPath, location="path")
    @bp.doc(
        responses=answers(
            {
                200: (StockLevel, "The level"),
                404: (UnknownGoods, "No stock row for this goods id"),
                503: DOWN,
            }
        )
    )
    def get_stock(goodsId: str, path_data: Any) -> Response:
        """The level of one goods id, the units of it held by unpaid holds, its low-stock
        threshold, its ledger's last entry, what it was last set to, and its fencing token."""
        seen = deps().locations.view(goodsId)  # one snapshot: the total and its parts agree
        if seen is None:
            raise ApiError(404, f"unknown goods: {goodsId}", goodsIds=[goodsId])
        row, places, in_transit = seen
        return jsonify(
            {
                "goodsId": goodsId,
                "num": row["num"],
                "held": row["held"],
                "lowStock": row["low_stock"],
                "seq": row["ledger_seq"],
                "seededNum": row["seeded_num"],
                "seedVersion": row["seed_version"],
                "fence": row["fence"],
                "locations": places,
                "inTransit": in_transit,
                "backorderLimit": row["backorder_limit"],
                "owed": row["owed"],
            }
        )

    # auth_required first: the token is checked before the path and the body.
    @bp.put("/stock/<goodsId>")
    @bp.auth_required(admin)
    @bp.input(GoodsPath, location="path")
    @bp.input(models.level, example={"num": 100})
    @bp.doc(
        responses=answers(
            {
                200: (LevelSet, "Set: a ledger entry of reason `set`, a new seed version"),
                403: ADMIN_OFF,
                409: (
                    ErrorBody,
                    "Nothing changed: the set would raise the goods id's total (with its "
                    "named locations' units) above MAX_STOCK_LEVEL",
                ),
                413: BODY_TOO_LARGE,
                503: DOWN,
            }
        )
    )
    def put_stock(goodsId: str, path_data: Any, json_data: Any) -> Response:
        """Admin: set a level (the seed), bringing the goods id into being if it is new: an
        adjustment of reason `set` (nothing is overwritten: the ledger keeps what the level
        was), under the goods id's lock, with a new seed version. It resets the row's fencing
        token to this holder's: the way back into service after the lock service was rebuilt
        (its tokens start again from small numbers)."""
        d = deps()
        setting = Adjustment(goodsId, "set", num=json_data.num, reference="PUT /stock")
        decision = d.deduction.adjust(setting)
        if decision.outcome is Outcome.ABOVE_MAX:
            message = (
                f"the level {decision.level} cannot be raised above "
                f"{d.settings.max_stock_level} (MAX_STOCK_LEVEL): nothing changed"
            )
            raise ApiError(409, message)
        # The level and version the set left, from its own commit: a read after it could
        # show a deduction committed since.
        [entry] = decision.entries
        return jsonify(
            {"goodsId": goodsId, "num": entry.level_after, "seedVersion": entry.seed_version}
        )

    add_health_route(bp, lambda: deps().health(), "the database, Redis and the lock service")
    return bp


# --- how the answers carry the rows ------------------------------------------------------


def flow_json(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "flag": row["flag"],
        "goodsId": row["goods_id"],
        "num": row["num"],
        "fence": row["fence"],
        "createTime": row["created_at"].isoformat(),
    }


def shortfalls_json(result: Any) -> list[dict[str, Any]]:
    found = []
    for s in result.shortfalls:
        line = {
            "goodsId": s.goods_id,
            "requested": s.requested,
            "available": s.available,
            "seedVersion": s.seed_version,
        }
        if s.bound is not None:  # fill=backorder refused past a limit: the one that bound
            bound = {"limit": s.bound.limit, "owed": s.bound.owed}
            if s.bound.location is not None:
                bound["location"] = s.bound.location
            line["backorderLimit"] = bound
        found.append(line)
    return found


def allocations_json(allocations: list[tuple[str, str, int]]) -> list[dict[str, Any]]:
    return [{"goodsId": g, "location": loc, "num": n} for g, loc, n in allocations]


def flag_result(flag: str, result: Any, backend: str) -> dict[str, Any]:
    """One flag's result in a batched answer (what the single route's body would say)."""
    if isinstance(result, NotAttempted):  # retryable: nothing written, its flag still live
        DEDUCTIONS.labels(Outcome.NOT_ATTEMPTED.value).inc()
        body: dict[str, Any] = {
            "flag": flag,
            "outcome": Outcome.NOT_ATTEMPTED,
            "error": result.error,
            "dependency": "lock",
        }
        if result.lock is not None:  # its queue was full
            body.update(lock=result.lock, goodsId=result.goods_id, retryAfter=result.retry_after)
        return body
    if isinstance(result, DependencyUnavailable):
        DEDUCTIONS.labels(Outcome.UNAVAILABLE.value).inc()
        return {
            "flag": flag,
            "outcome": Outcome.UNAVAILABLE,
            "error": result.answer(),
            "dependency": result.dependency,
        }
    DEDUCTIONS.labels(result.outcome.value).inc()
    body = {"flag": flag, "outcome": result.outcome.value}
    if result.shortfalls:  # a refusal's, or what a partial fill did not fill
        body["shortfalls"] = shortfalls_json(result)
    if result.outcome in (Outcome.DEDUCTED, Outcome.BACKORDERED):
        body["flows"] = [flow_json(row) for row in result.flows]
        body["allocations"] = allocations_json(result.allocations)
    if result.backordered:
        body["backordered"] = owed_json(result.backordered)
    return body


def owed_json(owed: dict[str, int]) -> list[dict[str, Any]]:
    return [{"goodsId": g, "num": n} for g, n in sorted(owed.items())]
