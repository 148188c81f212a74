"""The reservations' contract: what POST /reservations takes, and what the reservation routes
and a genOrder carrying a reservationId answer. As in api/schemas.py, the body's limits come from
the settings, and there is no `from __future__ import annotations` (pydantic reads these
annotations at class creation)."""

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

from order_service.api.schemas import LineShortfall, OrderAllocation, OrderAnswer, key_header
from shared.config.settings_checks import TTL_CEILING
from shared.web.schemas import (
    IDENTIFIER_PATTERN,
    WHOLE,
    Answer,
    ErrorBody,
    Identifier,
    Strict,
    Unavailable,
)

MAX_TTL = TTL_CEILING  # a cart's hold of at most an hour, lowered by RESERVATION_TTL_MAX_SECONDS


class BadTtl(ValueError):
    """ttlSeconds is not a whole number of seconds from 1 to its maximum: nothing is written."""


def ttl_of(value: Any, most: int = MAX_TTL) -> int:
    """The body's ttlSeconds, judged by the route (so a bad one is a 422 that names it);
    `most`: RESERVATION_TTL_MAX_SECONDS."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise BadTtl(
            f"ttlSeconds: must be a whole number of seconds from 1 to {most} "
            "(RESERVATION_TTL_MAX_SECONDS)"
        )
    return value


def reservation_body_model(
    max_lines: int, max_quantity: int, ttl_max: int = MAX_TTL
) -> type[Strict]:
    """The POST /reservations body under these limits."""

    class ReservedItem(Strict):
        goodsId: Identifier
        num: Annotated[
            int, Field(ge=1, le=max_quantity, description="units of this goods id"), WHOLE
        ]
        location: Annotated[
            str,
            Field(
                pattern=IDENTIFIER_PATTERN,
                description="the location this line is held from, or not at all; absent: "
                "wherever the stock service allocates it. A location it has not: 422",
                examples=["north"],
            ),
        ] = None  # type: ignore[assignment]

    class ReservationBody(Strict):
        """Units held for a cart, all or nothing, for ttlSeconds from the hold's confirmation.
        Repeated goods ids are summed (over MAX_QUANTITY: 422), as genOrder sums them."""

        userId: Annotated[
            str,
            Field(
                pattern=IDENTIFIER_PATTERN,
                description="the buyer; given, only this user's genOrder may consume it",
            ),
        ] = None  # type: ignore[assignment]
        items: Annotated[list[ReservedItem], Field(min_length=1, max_length=max_lines)]
        # Any value is taken here and judged by the route (ttl_of): a bad one is a 422.
        ttlSeconds: Annotated[
            Any,
            Field(
                description=f"seconds the units stay held once the hold is confirmed, 1 to "
                f"{ttl_max} (RESERVATION_TTL_MAX_SECONDS); unconsumed and unreleased by then, "
                "the elected reconciler expires the reservation and the units come back. Any "
                "other value: 422",
                json_schema_extra={"type": "integer", "minimum": 1, "maximum": ttl_max},
            ),
        ]

        def pairs(self) -> list[tuple[str, int]]:
            return [(item.goodsId, item.num) for item in self.items]

        def located(self) -> list[tuple[str, str | None]]:
            return [(item.goodsId, item.location) for item in self.items]

    return ReservationBody


class ReservationPath(BaseModel):
    reservationId: Identifier


class ReservationKeyHeaders(BaseModel):
    """POST /reservations' Idempotency-Key (apiflask hands headers over as snake_case)."""

    model_config = ConfigDict(populate_by_name=True)
    idempotency_key: str = key_header(
        "1-128 printable characters. A repeat with the same key and body holds nothing new "
        "and answers the reservation it made, as it is once its first post has finished (201 "
        "held; 409 failed; 200 released, expired or consumed since; 202 still pending), with "
        "Idempotent-Replayed: true; with another body, 422."
    )


class ReservationState(StrEnum):
    pending = "pending"
    held = "held"
    failed = "failed"
    consumed = "consumed"
    released = "released"
    expired = "expired"


class ReservedLine(BaseModel):
    goodsId: str
    num: int
    location: str | None = Field(None, description="the location the line named")


class ReservationView(Answer):
    reservationId: str
    userId: str | None
    state: ReservationState = Field(
        description="pending (its hold not decided yet), held, failed (nothing held), and "
        "exactly one of consumed, released, expired once held"
    )
    reason: str | None
    ttlSeconds: int
    expiresAt: str | None = Field(
        description="held: the time (UTC) after which no order may consume it, and the "
        "reconciler expires it; null until held"
    )
    createTime: str
    updateTime: str
    items: list[ReservedLine]
    allocations: list[OrderAllocation] = Field(
        description="where its units were taken from (the stock service's answer)"
    )
    orderId: str | None = Field(None, description="consumed: the order made of it (same id)")
    unitsReturned: bool | None = Field(
        None, description="released or expired: whether the stock service has taken its units back"
    )


class ReservationRefusal(ErrorBody):
    reservationId: str | None = None
    state: ReservationState | None = None
    reason: str | None = None
    shortfalls: list[LineShortfall] | None = Field(
        None, description="the lines the stock could not hold, with what it had"
    )
    goodsIds: list[str] | None = Field(None, description="the goods ids the stock has not")
    locations: list[str] | None = Field(None, description="locations the stock service has not")
    goodsId: str | None = Field(
        None,
        description="reason limit_held (409): the goods id whose maxHeld per buyer refused it "
        "(nothing written, nothing held)",
    )
    limit: int | None = Field(None, description="with goodsId: the goods id's maxHeld")
    had: int | None = Field(
        None, description="with goodsId: the units the buyer held already (reservations, holds)"
    )


class ReservationNotChanged(ErrorBody):
    reservationId: str
    state: ReservationState
    reason: str | None = None
    refused: Literal["pending", "failed", "consumed", "released", "expired"] = Field(
        description="why nothing was done: pending (not held yet), failed (nothing was held), "
        "consumed (its order was made), released, expired (its time ran out)"
    )
    orderId: str | None = Field(None, description="consumed: the order made of it")


class ReservationUnavailable(Unavailable):
    reservationId: str | None = Field(None, description="the reservation, if one was written")
    state: ReservationState | None = Field(
        None,
        description="failed (final: nothing held), pending (unknown for now: the reconciler "
        "settles it), released (recorded: its units come back later)",
    )
    reason: str | None = None


class ConsumeRefused(ErrorBody):
    """A genOrder with a reservationId that the goods id's perBuyer refuses: no order, the
    reservation still held."""

    reason: Literal["limit_per_buyer"]
    goodsId: str
    limit: int
    had: int
    reservationId: str


class OrderConflict(RootModel[OrderAnswer | ReservationNotChanged | ConsumeRefused]):
    """genOrder's 409: the order refused or cancelled (OrderAnswer), or, with a reservationId,
    the reservation not held (ReservationNotChanged)."""
