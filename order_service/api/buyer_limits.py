"""The flash-sale rules' admin routes (docs/buyer-limits.md): PUT and GET /buyer-limits/{goodsId},
behind `Authorization: Bearer <ADMIN_TOKEN>` as the stock service's admin routes are (one guard
for both: shared/web/admin_auth.py). With no ADMIN_TOKEN configured they are off (403).

(No `from __future__ import annotations`: pydantic reads these annotations at class creation.)
"""

from typing import Annotated, Any

from apiflask import APIBlueprint
from flask import Response, current_app, jsonify
from pydantic import BaseModel, Field

from order_service.api.deps import OrderDeps
from order_service.core.buyer_limits import BUYER_LIMIT_MAX, Limits
from shared.config.settings import Settings
from shared.web.admin_auth import admin_auth
from shared.web.api_app import answers
from shared.web.http_errors import ApiError
from shared.web.schemas import (
    ADMIN_OFF,
    BODY_TOO_LARGE,
    WHOLE,
    Answer,
    Identifier,
    Strict,
    Unavailable,
)

DOWN = (Unavailable, "The order database is down: nothing written")
# A whole number here (else 400, as every body's types); its range is the route's (else 422).
LIMIT = Annotated[
    int,
    Field(
        description=f"units, 0 to {BUYER_LIMIT_MAX}",
        json_schema_extra={"minimum": 0, "maximum": BUYER_LIMIT_MAX},
    ),
    WHOLE,
]


class GoodsPath(BaseModel):
    goodsId: Identifier


class LimitsBody(Strict):
    """A goods id's rules, replacing those it had: absent or null is no rule (maxHeld: the
    default, BUYER_MAX_HELD_DEFAULT)."""

    perBuyer: LIMIT | None = Field(
        None,
        description="the units of this goods id one userId may have in orders not FAILED or "
        "CANCELLED, across all its orders; past it genOrder answers 409 limit_per_buyer, the "
        "order FAILED with nothing deducted. Absent or null: no limit",
    )
    maxHeld: LIMIT | None = Field(
        None,
        description="the units of this goods id one userId may hold at once in reservations "
        "(pending or held) and unpaid holds (payWithinSeconds); past it 409 limit_held, "
        "nothing held. Absent or null: BUYER_MAX_HELD_DEFAULT (unset: no cap)",
    )


class LimitsView(Answer):
    goodsId: str
    perBuyer: int | None = Field(description="null: no limit")
    maxHeld: int | None = Field(description="the goods id's own; null: the default")
    maxHeldDefault: int | None = Field(description="BUYER_MAX_HELD_DEFAULT; null: no cap")
    effectiveMaxHeld: int | None = Field(description="the cap in force; null: none")


def deps() -> OrderDeps:
    return current_app.extensions["orders"]


def limits_view(goods_id: str, limits: Limits, default: int | None) -> dict[str, Any]:
    return {
        "goodsId": goods_id,
        "perBuyer": limits.per_buyer,
        "maxHeld": limits.max_held,
        "maxHeldDefault": default,
        "effectiveMaxHeld": limits.held_cap(default),
    }


def buyer_limit_routes(settings: Settings) -> APIBlueprint:
    bp = APIBlueprint("buyer_limits", __name__, tag="Buyer limits")
    admin = admin_auth(settings.admin_token, "order service")
    default = settings.buyer_max_held_default

    # auth_required first: the token is checked before the path and the body.
    @bp.put("/buyer-limits/<goodsId>")
    @bp.auth_required(admin)
    @bp.input(GoodsPath, location="path")
    @bp.input(LimitsBody, example={"perBuyer": 1, "maxHeld": 2})
    @bp.doc(
        responses=answers(
            {
                200: (
                    LimitsView,
                    "Set: every order and reservation created after this answer is judged by "
                    "them (in the transaction that creates it)",
                ),
                403: ADMIN_OFF,
                413: BODY_TOO_LARGE,
                503: DOWN,
            }
        )
    )
    def put_limits(goodsId: str, path_data: Any, json_data: Any) -> Response:
        """Admin: a goods id's flash-sale rules per buyer, replacing those it had."""
        wanted = Limits(json_data.perBuyer, json_data.maxHeld)
        for name, value in (("perBuyer", wanted.per_buyer), ("maxHeld", wanted.max_held)):
            if value is not None and not 0 <= value <= BUYER_LIMIT_MAX:
                message = f"{name}: a whole number of units from 0 to {BUYER_LIMIT_MAX}, or null"
                raise ApiError(422, message, field=name)
        d = deps()
        d.buyer_rules.put(d.store, goodsId, wanted)
        return jsonify(limits_view(goodsId, wanted, default))

    @bp.get("/buyer-limits/<goodsId>")
    @bp.auth_required(admin)
    @bp.input(GoodsPath, location="path")
    @bp.doc(
        responses=answers(
            {
                200: (LimitsView, "The rules (a goods id never set: none, maxHeld the default)"),
                403: ADMIN_OFF,
                503: DOWN,
            }
        )
    )
    def get_limits(goodsId: str, path_data: Any) -> Response:
        """Admin: a goods id's flash-sale rules per buyer, and the maxHeld in force."""
        d = deps()
        return jsonify(limits_view(goodsId, d.buyer_rules.get(d.store, goodsId), default))

    return bp
