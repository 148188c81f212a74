"""The stock service's routes that settle a flag, called by the order service and the elected
reconciler (STOCK_SERVICE_TOKEN guards them, as reduceStock): what was decided for a flag,
its void, its return (a cancel), and the release of a paid hold's units."""

from __future__ import annotations

from typing import Any

from apiflask import APIBlueprint
from flask import Response, current_app, jsonify

from shared.contract import Decided
from shared.logs import log_context
from shared.metrics import DEDUCTIONS
from shared.web.api_app import answers
from shared.web.schemas import Unavailable
from stock_service.api.deps import StockDeps
from stock_service.api.schemas import FlagPath, FlagState, HoldReleased, Returned, Voided
from stock_service.api.stock import allocations_json, flow_json
from stock_service.core import DEFAULT
from stock_service.deduction import Outcome

DOWN = (Unavailable, "A dependency is down, or the lock was not had: nothing written")


def deps() -> StockDeps:
    return current_app.extensions["stock"]


def settle_routes() -> APIBlueprint:
    bp = APIBlueprint("settle", __name__, tag="Stock")

    @bp.put("/voidFlag/<flag>")
    @bp.input(FlagPath, location="path")
    @bp.doc(
        responses=answers(
            {
                200: (
                    Voided,
                    "The flag's decision: voided (now, or before), or what it was before "
                    "(deducted or returned, with its flows; refused): nothing changed",
                ),
                503: DOWN,
            }
        )
    )
    def void_flag(flag: str, path_data: Any) -> Response:
        """Settle a flag whose outcome is unknown: unless it was deducted, decide it voided,
        so no deduction of it can ever happen (a later one is answered `voided`). What the
        order service does when it cannot learn an outcome, and what the reconciler does to
        settle an order left PENDING. Needs no lock: the decision's key orders it against a
        deduction."""
        log_context(flag=flag, order_id=flag)
        outcome = deps().deduction.void(flag, "voided: outcome unknown to the order service")
        deducted = outcome in (Decided.DEDUCTED, Decided.RETURNED)
        flows = deps().store.flows(flag) if deducted else []
        return jsonify({"flag": flag, "outcome": outcome, "flows": [flow_json(f) for f in flows]})

    @bp.put("/returnStock/<flag>")
    @bp.input(FlagPath, location="path")
    @bp.doc(
        responses=answers(
            {
                200: (Returned, "The flag's stock is back, or the flag is voided"),
                503: DOWN,
            }
        )
    )
    def return_stock(flag: str, path_data: Any) -> Response:
        """Cancel: give back exactly what this flag deducted, once, under the same lock and
        fence as a deduction. A flag with no deduction is voided (an empty rollback, recorded),
        so a deduction of it arriving later is refused."""
        log_context(flag=flag, order_id=flag)
        outcome = deps().deduction.cancel(flag)
        rows = deps().store.returns(flag) if outcome is Outcome.RETURNED else []
        DEDUCTIONS.labels(f"cancel_{outcome.value}").inc()
        return jsonify(
            {"flag": flag, "outcome": outcome.value, "returns": [flow_json(r) for r in rows]}
        )

    @bp.get("/flags/<flag>")
    @bp.input(FlagPath, location="path")
    @bp.doc(
        responses=answers({200: (FlagState, "The flag's decision (null: none yet)"), 503: DOWN})
    )
    def flag_state(flag: str, path_data: Any) -> Response:
        """What the stock database decided for a flag, changing nothing: what the order
        service and the reconciler ask when an outcome is unknown. Undecided, no attempt of it
        has committed yet (one may still: the reconciler deducts again under the same flag,
        and voids it only after RECONCILE_VOID_AFTER)."""
        d = deps()
        decided = d.store.decision(flag)
        shown = decided in (Decided.DEDUCTED, Decided.RETURNED)
        rows = d.store.flows(flag) if shown else []
        flows = [flow_json(row) for row in rows]
        body = {"flag": flag, "decision": decided, "flows": flows}
        if rows:  # where its units were taken from (no allocation rows: all from default)
            parts = d.store.allocations(flag)
            body["allocations"] = allocations_json(
                [
                    (row["goods_id"], loc, n)
                    for row in rows
                    for loc, n in sorted(
                        parts.get(row["goods_id"], {DEFAULT: int(row["num"])}).items()
                    )
                ]
            )
        lines = d.store.backorders(flag) if decided == Decided.DEDUCTED else []
        if lines:  # a backordered flag's lines: what each wanted, got since, and its state
            body["backorders"] = lines
        return jsonify(body)

    @bp.put("/holds/<flag>/release")
    @bp.input(FlagPath, location="path")
    @bp.doc(responses=answers({200: (HoldReleased, "Released, or nothing to release"), 503: DOWN}))
    def release_hold(flag: str, path_data: Any) -> Response:
        """A hold was paid: its units are no longer counted as held (GET /stock's `held`). The
        order service calls it after a pay; idempotent, and it needs no lock."""
        log_context(flag=flag, order_id=flag)
        return jsonify({"flag": flag, "released": deps().deduction.release_hold(flag)})

    return bp
