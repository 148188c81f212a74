"""The order service's contract: what POST /genOrder and GET /orders take and answer.

The body's limits come from the settings (MAX_LINES, MAX_QUANTITY), so its model is made per
app by `order_body_model`; the document at /openapi.json shows the limits in force.
(No `from __future__ import annotations` here: pydantic reads these annotations at class
creation, including the limits of the enclosing function.)
"""

from enum import StrEnum
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    model_validator,
)

from order_service.core.fills import ALL_OR_NOTHING, FILLS
from shared.config.settings_checks import PAY_WITHIN_CEILING
from shared.web.schemas import (
    IDENTIFIER_PATTERN,
    WHOLE,
    Answer,
    ErrorBody,
    Identifier,
    Strict,
    Unavailable,
)


class OrderStatus(StrEnum):
    PENDING = "PENDING"
    CONFIRMED = "CONFIRMED"
    FAILED = "FAILED"
    AWAITING_PAYMENT = "AWAITING_PAYMENT"
    BACKORDERED = "BACKORDERED"
    CANCELLING = "CANCELLING"
    CANCELLED = "CANCELLED"


MAX_PAY_WITHIN = PAY_WITHIN_CEILING  # a hold of at most a week, lowered by PAY_WITHIN_MAX_SECONDS


def order_body_model(
    max_lines: int, max_quantity: int, pay_within_max: int = MAX_PAY_WITHIN
) -> type[Strict]:
    """The genOrder body under these limits: one of the article's two forms."""

    class OrderItem(Strict):
        goodsId: Identifier
        num: Annotated[
            int, Field(ge=1, le=max_quantity, description="units of this goods id"), WHOLE
        ]
        # Absent is None, as OrderBody.goodsIds.
        location: Annotated[
            str,
            Field(
                pattern=IDENTIFIER_PATTERN,
                description="the location (PUT /locations/{locationId} of the stock service) "
                "this line is taken from, or not at all; absent: wherever the stock service "
                "allocates it. A location it has not: 422, nothing placed",
                examples=["north"],
            ),
        ] = None  # type: ignore[assignment]

    class OrderBody(Strict):
        """goodsIds (one unit of each) or items (a num each), not both. Repeated goods ids are
        summed; a sum over MAX_QUANTITY is refused with 422."""

        model_config = ConfigDict(
            strict=True,
            json_schema_extra={"oneOf": [{"required": ["goodsIds"]}, {"required": ["items"]}]},
        )
        userId: Identifier
        # Absent is None; null is not accepted. A None default rather than `| None`: a default
        # is not validated, and the document shows a list, not "a list or null" (hence the
        # ignores: the type says what may be sent).
        goodsIds: Annotated[list[Identifier], Field(min_length=1, max_length=max_lines)] = None  # type: ignore[assignment]
        items: Annotated[list[OrderItem], Field(min_length=1, max_length=max_lines)] = None  # type: ignore[assignment]
        payWithinSeconds: Annotated[
            int,
            Field(
                ge=1,
                le=MAX_PAY_WITHIN,  # PAY_WITHIN_MAX_SECONDS, lower, judged by the route: 422
                json_schema_extra={"maximum": pay_within_max},
                description="a hold: the stock is deducted and the order AWAITING_PAYMENT "
                "until POST /orders/{orderId}/pay; unpaid by then, it is cancelled and the "
                f"stock returned. At most {pay_within_max} (PAY_WITHIN_MAX_SECONDS; above: "
                "422). Its units count toward the goods id's maxHeld per buyer "
                "(PUT /buyer-limits/{goodsId}: over it, 409 limit_held)",
            ),
            WHOLE,
        ] = None  # type: ignore[assignment]
        reservationId: Annotated[
            str,
            Field(
                pattern=IDENTIFIER_PATTERN,
                description="a held reservation (POST /reservations) turned into this order "
                "with no second deduction: the order's id is the reservation's, its lines "
                "must be the reservation's (else 422); unknown: 404; not held (consumed, "
                "released, expired, failed): 409",
            ),
        ] = None  # type: ignore[assignment]
        # Any value is taken here and judged by the route (order_service/core/fills.py, fill_of):
        # one other than these three is refused with 422, as the stock service refuses it.
        fill: Annotated[
            Any,
            Field(
                description="all (the default): every line filled whole, or the order fails; "
                "partial: confirmed with what the stock can fill (at least one unit), each "
                "line's `filled` in the answer and `shortfalls` the lines not filled whole; "
                "what was not filled is never deducted later; backorder: what is on hand "
                "taken (a line naming its location: what is there), the rest owed within each "
                "goods id's backorder limit, and a line naming a location within that "
                "location's too (else FAILED as all is): BACKORDERED, the units owed per line "
                "in `backordered`, filled oldest order first as units arrive (at its location, "
                "for a line naming one) and CONFIRMED once every line is filled (by the "
                "reconciler, within RECONCILE_INTERVAL); with payWithinSeconds: 422. Any other "
                "value: 422",
                json_schema_extra={"enum": list(FILLS)},
            ),
        ] = ALL_OR_NOTHING

        @model_validator(mode="after")
        def _one_form(self) -> Self:
            if (self.goodsIds is None) == (self.items is None):
                raise ValueError("give exactly one of goodsIds or items")
            return self

        def pairs(self) -> list[tuple[str, int]]:
            """(goods id, units) per line, repeats not yet summed."""
            if self.goodsIds is not None:
                return [(goods_id, 1) for goods_id in self.goodsIds]
            return [(item.goodsId, item.num) for item in self.items]

        def located(self) -> list[tuple[str, str | None]]:
            """(goods id, location) per line; goodsIds name none."""
            if self.goodsIds is not None:
                return [(goods_id, None) for goods_id in self.goodsIds]
            return [(item.goodsId, item.location) for item in self.items]

    return OrderBody


class OrderPath(BaseModel):
    orderId: Identifier


def key_header(description: str, **required: Any) -> Any:
    """The Idempotency-Key header's field, one rule for every route that takes it: 1-128
    printable characters. Absent is None (as OrderBody.goodsIds), unless `required` says
    otherwise (`default=...`)."""
    return Field(
        **{"default": None, **required},
        alias="Idempotency-Key",
        min_length=1,
        max_length=128,
        pattern=r"^[\x20-\x7e]+$",
        description=description,
    )


class IdempotencyHeaders(BaseModel):
    """apiflask hands headers over as snake_case names; the document shows the real one."""

    model_config = ConfigDict(populate_by_name=True)
    idempotency_key: str = key_header(
        "1-128 printable characters. A repeat with the same key and body places "
        "nothing new and answers the order's current state, once its first request has "
        "finished (200 placed; 409 refused; 409 CANCELLED if it was cancelled since, or if "
        "the key was cancelled before it was placed); with another body, 422."
    )


class CancelKeyHeaders(BaseModel):
    """The Idempotency-Key an order was placed under, to cancel it by (required here)."""

    model_config = ConfigDict(populate_by_name=True)
    idempotency_key: str = key_header("the key the order was placed under", default=...)


class OrderLine(BaseModel):
    goodsId: str
    num: int = Field(description="units ordered")
    filled: int | None = Field(
        None,
        description="an order that asked for a fill or a location: the units filled (null "
        "while unknown; a backorder: taken on hand, and handed to it since). Absent: all or "
        "nothing, filled whole once deducted",
    )
    location: str | None = Field(None, description="the location the line named")


class OrderAllocation(BaseModel):
    goodsId: str
    location: str
    num: int


class LineOwed(BaseModel):
    goodsId: str
    num: int = Field(description="units owed, waiting in line for stock to arrive")


class LineShortfall(BaseModel):
    """A line not filled whole: refused for lack of stock (with the level's seed version), or
    a partial order's line filled in part or not at all."""

    goodsId: str
    requested: int
    available: int
    seedVersion: int | None = None


class OrderAnswer(Answer):
    orderId: str
    status: OrderStatus
    result: Literal["success", "false", "pending", "cancelled"] = Field(
        description="the article's field: success (CONFIRMED, or AWAITING_PAYMENT: placed and "
        "held, or BACKORDERED: placed, units owed), false (FAILED), pending (PENDING, "
        "CANCELLING), cancelled (CANCELLED)"
    )
    reason: str | None = Field(None, description="why FAILED, or why still PENDING")
    shortfalls: list[LineShortfall] | None = Field(
        None,
        description="with insufficient_stock; and a partial order's lines not filled whole "
        "(available: what was filled of it)",
    )
    payBy: str | None = Field(None, description="a hold: the payment's deadline (UTC)")
    fill: Literal["all", "partial", "backorder"] | None = Field(
        None, description="an order that asked for a fill or a location: what it asked"
    )
    items: list[OrderLine] | None = Field(
        None, description="an order that asked for a fill or a location: its lines"
    )
    allocations: list[OrderAllocation] | None = Field(
        None, description="where its units were taken from, when the stock service said"
    )
    backordered: list[LineOwed] | None = Field(
        None,
        description="BACKORDERED: the units each line still owes (ordered, less what it has "
        "had: taken when placed, and handed to it since as the reconciler last saw it)",
    )
    goodsId: str | None = Field(
        None,
        description="FAILED by a flash-sale rule per buyer (reason limit_per_buyer or "
        "limit_held): the goods id whose limit refused it",
    )
    limit: int | None = Field(None, description="with goodsId: the rule's limit")
    had: int | None = Field(
        None,
        description="with goodsId: the units the buyer had before this order (in orders not "
        "FAILED or CANCELLED; limit_held: held in reservations and unpaid holds)",
    )
    error: str | None = Field(None, description="with goodsId: the refusal, for a person")


class OrderView(Answer):
    orderId: str
    userId: str
    status: OrderStatus
    reason: str | None
    items: list[OrderLine]
    createTime: str
    updateTime: str
    payBy: str | None = None
    paidTime: str | None = None
    fill: Literal["all", "partial", "backorder"] | None = Field(
        None, description="an order that asked for a fill or a location: what it asked"
    )
    allocations: list[OrderAllocation] | None = Field(
        None, description="where its units were taken from, when the stock service said"
    )
    backordered: list[LineOwed] | None = Field(
        None,
        description="BACKORDERED: the units each line still owes (ordered, less what it has "
        "had: taken when placed, and handed to it since as the reconciler last saw it)",
    )


class OrderNotChanged(ErrorBody):
    orderId: str
    status: OrderStatus
    reason: str | None = None
    refused: Literal["expired", "cancelled", "failed", "not_placed", "not_a_hold"] = Field(
        description="why nothing was done, for a program: expired (the hold's time ran out), "
        "cancelled, failed (nothing was deducted), not_placed (still PENDING), not_a_hold"
    )


class OrderRefused(ErrorBody):
    goodsIds: list[str] | None = Field(None, description="the goods ids the stock has not")
    locations: list[str] | None = Field(
        None, description="the locations the lines named that the stock service has not"
    )
    orderId: str | None = Field(None, description="the order an Idempotency-Key belongs to")


class OrderUnavailable(Unavailable):
    orderId: str | None = Field(None, description="the order, if one was created")
    status: OrderStatus | None = Field(None, description="FAILED, or PENDING when unknown")
    reason: str | None = None
