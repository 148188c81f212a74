"""The contract of the ledger's routes: adjustments, history, the low-stock threshold, and the
stock events' schema. (No `from __future__ import annotations`: pydantic reads these
annotations at class creation, including the enclosing function's limits.)"""

from datetime import UTC, datetime
from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shared.web.schemas import WHOLE, Answer, ErrorBody, Identifier, Strict, text
from stock_service.core import REASONS

REASON_TEXT = ", ".join(REASONS)


# The largest level a column holds (BIGINT). A level may pass MAX_STOCK_LEVEL (returns and
# transfers' in-legs are never refused), so the level a caller names (`expected`, and `num`
# for a count that lowers such a level) is bounded by what can be stored, not by the cap.
LEVEL_LIMIT = 2**63 - 1


def adjustment_model(max_level: int) -> type[Strict]:
    class AdjustmentBody(Strict):
        """By `delta`, or to `num`; with `expected`, only if the level is the one expected (a
        compare-and-swap: 409 with the level when it is stale). MAX_STOCK_LEVEL bounds what an
        adjustment may raise the goods id's total level to (409 above it); one that lowers the
        level or keeps it is taken whatever the level (returns and transfers received may
        leave it above the cap)."""

        model_config = ConfigDict(
            strict=True,
            json_schema_extra={"oneOf": [{"required": ["delta"]}, {"required": ["num"]}]},
        )
        reason: str = Field(description=f"one of: {REASON_TEXT} (422 otherwise)")
        delta: Annotated[
            int,
            Field(
                ge=-LEVEL_LIMIT,
                le=max_level,
                description=f"units in (+) or out (-); in: 409 if the total would go above "
                f"MAX_STOCK_LEVEL ({max_level})",
            ),
            WHOLE,
        ] = None  # type: ignore[assignment]
        num: Annotated[
            int,
            Field(
                ge=0,
                le=LEVEL_LIMIT,
                description=f"the new level; one that raises it: 409 if the total would go "
                f"above MAX_STOCK_LEVEL ({max_level}), one that lowers it: taken",
            ),
            WHOLE,
        ] = None  # type: ignore[assignment]
        expected: Annotated[
            int,
            Field(
                ge=0,
                le=LEVEL_LIMIT,
                description="the level the caller saw (any level, above MAX_STOCK_LEVEL too)",
            ),
            WHOLE,
        ] = None  # type: ignore[assignment]
        reference: Annotated[str, text(200, "a document (the column holds 200 characters)")] = None  # type: ignore[assignment]
        location: Identifier | None = Field(
            None,
            description="the location it changes (404 if there is none such); none: `default`, "
            "and `expected` is the level there",
        )

        @model_validator(mode="after")
        def _one_form(self) -> Self:
            if (self.delta is None) == (self.num is None):
                raise ValueError("give exactly one of delta or num")
            return self

    return AdjustmentBody


# The most locations one policy may name (a location's limit each).
MAX_POLICY_LOCATIONS = 100


def policy_model(max_level: int) -> type[Strict]:
    class PolicyBody(Strict):
        backorderLimit: Annotated[
            int,
            Field(
                le=max_level,
                description="units the goods id may owe at once (fill=backorder); 0: none, the "
                "default; below 0: 422",
            ),
            WHOLE,
        ]
        locations: dict[str, int] | None = Field(
            None,
            description="a location's limit: the units the goods id's lines naming that "
            "location (fill=backorder) may owe at once, within `backorderLimit`; a location "
            "not given has none but the goods id's. Replaces the locations' limits set before "
            "(absent: none). Each name a known location (404 otherwise, `locations`), each "
            f"limit 0..{max_level}, at most {MAX_POLICY_LOCATIONS} locations, no two names "
            "differing only in case: 422 (`field: locations`), nothing written",
        )

    return PolicyBody


class PolicySet(Answer):
    goodsId: str
    backorderLimit: int
    locations: dict[str, int] = Field(description="each location's limit (none: the goods id's)")


class Policy(PolicySet):
    owed: int = Field(description="units the goods id owes now, to lines waiting in order")
    owedAt: dict[str, int] = Field(
        description="units its waiting lines naming each location still wait for there"
    )


def threshold_model(max_level: int) -> type[Strict]:
    class ThresholdBody(Strict):
        lowStock: Annotated[
            int | None,
            Field(ge=1, le=max_level, description="a level below this is low; null: none"),
            WHOLE,
        ]

    return ThresholdBody


# An ISO 8601 time, as the history's `at` takes it (a number is not a time here).
ISO_TIME = r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?$"


class HistoryQuery(BaseModel):
    limit: int = Field(50, ge=1, le=500, description="entries in the page, newest first")
    # Bounded by the column's type (BIGINT): a larger number is no seq, and SQLite's driver
    # cannot even bind it (a 500 Schemathesis found).
    before: int | None = Field(None, ge=1, le=2**63 - 1, description="the seq the page ends before")
    at: str | None = Field(
        None,
        pattern=ISO_TIME,
        json_schema_extra={"format": "date-time"},
        description="instead of a page: the level at this time (ISO 8601; UTC if no offset)",
    )

    def moment(self) -> datetime | None:
        """`at` as a naive UTC time, as the columns keep it."""
        if self.at is None:
            return None
        found = datetime.fromisoformat(self.at.replace("Z", "+00:00"))
        if found.tzinfo is not None:
            try:
                found = found.astimezone(UTC).replace(tzinfo=None)
            except OverflowError as exc:  # 0001-01-01T00:00+00:01 is in year 0 in UTC
                raise ValueError("out of the range of times") from exc
        return found


class Entry(BaseModel):
    seq: int = Field(description="the goods id's n-th entry")
    kind: Literal[
        "deducted",
        "returned",
        "adjusted",
        "transfer_out",
        "transfer_in",
        "backordered",
        "backorder_filled",
    ]
    delta: int
    levelAfter: int
    time: str
    flag: str | None = Field(None, description="deducted, returned: the order's flag")
    location: str | None = Field(
        None, description="where it moved units (a split deduction: `allocations`)"
    )
    allocations: list[dict[str, int | str]] | None = Field(
        None, description="a line taken from several locations: each location and its units"
    )
    transferId: str | None = Field(None, description="transfer_out, transfer_in: the transfer")
    reason: str | None = Field(None, description="adjusted: its reason")
    reference: str | None = None


class Adjusted(Answer):
    goodsId: str
    num: int = Field(description="the level after")
    entry: Entry


class Stale(ErrorBody):
    num: int = Field(description="the level now")


class History(Answer):
    goodsId: str
    entries: list[Entry] | None = None
    next: int | None = Field(None, description="`before` for the next page; none at the end")
    at: str | None = None
    num: int | None = Field(None, description="with `at`: the level then")


class ThresholdSet(Answer):
    goodsId: str
    lowStock: int | None


class StockEvent(BaseModel):
    """One entry of the Redis Stream of stock events (STOCK_EVENTS_STREAM): every value a
    string, as Redis keeps them. At least once, in ledger order per goods id: a consumer drops
    repeats by `id`."""

    id: str = Field(description="the outbox row's id: unique, and growing per goods id")
    goodsId: str
    seq: str = Field(description="the ledger entry it tells of")
    kind: Literal[
        "deducted",
        "returned",
        "adjusted",
        "transfer_out",
        "transfer_in",
        "backordered",
        "backorder_filled",
        "low_stock",
        "out_of_stock",
        "back_in_stock",
    ]
    delta: str
    level: str = Field(description="the level after the entry")
    flag: str = Field(description="deducted, returned: the order's flag; else empty")
    reason: str = Field(description="adjusted: its reason; a transfer's leg: the transfer")
    location: str = Field(
        description="where the entry moved units: a location, or a split line's parts "
        "(`north:3,south:2`); empty for events from before locations"
    )
    time: str
