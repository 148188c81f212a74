"""The stock service's contract: the bodies of reduceStock, PUT /stock and PUT /faults, and
what each route answers.

Limits come from the settings (MAX_LINES, MAX_QUANTITY, MAX_STOCK_LEVEL), so the input models
are made per app by `input_models`. (No `from __future__ import annotations`: pydantic reads
these annotations at class creation, including the enclosing function's limits.)
"""

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

from shared.contract import MAX_BATCH_FLAGS, Decided, Outcome
from shared.web.schemas import WHOLE, Answer, ErrorBody, Identifier, Shortfall, Strict


@dataclass(frozen=True)
class InputModels:
    lines: type[RootModel[Any]]
    level: type[Strict]
    fault: type[Strict]
    batch: type[Strict]


def input_models(max_lines: int, max_quantity: int, max_stock_level: int) -> InputModels:
    class DeductionLine(Strict):
        goodsId: Identifier
        goodsNum: Annotated[int, Field(ge=1, le=max_quantity), WHOLE]
        location: Identifier | None = Field(
            None, description="take this line from this location alone (or not at all)"
        )

    class DeductionLines(RootModel[list[DeductionLine]]):
        """The goods to deduct for one flag; repeated goods ids are summed (a sum over
        MAX_QUANTITY: 422)."""

        model_config = ConfigDict(strict=True)
        root: Annotated[list[DeductionLine], Field(min_length=1, max_length=max_lines)]

        def pairs(self) -> list[tuple[str, int]]:
            return [(line.goodsId, line.goodsNum) for line in self.root]

        def places(self) -> list[tuple[str, str | None]]:
            return [(line.goodsId, line.location) for line in self.root]

    class StockLevelBody(Strict):
        num: Annotated[
            int,
            Field(
                ge=0,
                le=max_stock_level,
                description="the new level at the default location; one that would raise the "
                "goods id's total (its named locations' units too) above MAX_STOCK_LEVEL: 409",
            ),
            WHOLE,
        ]

    class FaultBody(Strict):
        value: Annotated[
            int | float, Field(ge=0, le=120, description="seconds, for the delays and pauses")
        ] = 0
        times: Annotated[
            int, Field(ge=0, le=1000, description="how many firings (0: disarm)"), WHOLE
        ] = 1

    class FlagLines(Strict):
        flag: Identifier
        lines: Annotated[list[DeductionLine], Field(min_length=1, max_length=max_lines)]
        hold: bool = Field(False, description="a hold's deduction (see ?hold on the single route)")
        fill: Fill = Field("all", description=FILL_TEXT)

        def pairs(self) -> list[tuple[str, int]]:
            return [(line.goodsId, line.goodsNum) for line in self.lines]

        def places(self) -> list[tuple[str, str | None]]:
            return [(line.goodsId, line.location) for line in self.lines]

    class BatchBody(Strict):
        """Many flags, each its own operation: its own lines, decision and answer. A flag may
        appear once."""

        flags: Annotated[list[FlagLines], Field(min_length=1, max_length=MAX_BATCH_FLAGS)]

    return InputModels(DeductionLines, StockLevelBody, FaultBody, BatchBody)


class FlagPath(BaseModel):
    flag: Identifier


# A plain string checked by the route (422 otherwise), as an adjustment's reason is: a value
# the API will not act on, not a malformed body.
Fill = str
FILL_TEXT = (
    "all (the default): every line whole, or nothing; partial: what is there, answered per "
    "line in `shortfalls`, refused only when nothing at all could be filled; backorder: what "
    "is there (a line naming a location: what that location has), the rest owed (answered "
    "`backordered`) when the goods id's backorder limit allows, and a line naming a location "
    "that location's limit too (PUT /stock/{goodsId}/policy), else refused as `all` is, the "
    "shortfall naming the limit that bound (`backorderLimit`); no hold (else 422)"
)


class HoldQuery(BaseModel):
    fill: Fill = Field("all", description=FILL_TEXT)
    hold: bool = Field(
        False,
        description="a hold's deduction (genOrder's payWithinSeconds): its units are counted "
        "as held (GET /stock's `held`) until PUT /holds/{flag}/release, or until they return",
    )


class HoldReleased(Answer):
    flag: str
    released: bool = Field(description="false: nothing was held (not a hold, paid before, back)")


class GoodsPath(BaseModel):
    goodsId: Identifier


class FaultPath(BaseModel):
    # Not an enum: an unknown point is a 404 that lists the known ones.
    point: Identifier


class LockHold(BaseModel):
    backend: str
    nodes: dict[str, str] = Field(description="lock name -> the node or key that held it")
    fence: dict[str, int | None] = Field(description="lock name -> fencing token")
    batchSize: int = Field(description="the requests served in the same lock hold")


class Flow(BaseModel):
    id: str
    flag: str
    goodsId: str
    num: int
    fence: int | None
    createTime: str


class BackorderLine(BaseModel):
    goodsId: str
    wanted: int = Field(description="the units it owed when it started waiting")
    filled: int = Field(description="the units handed to it since, oldest line first")
    state: Literal["waiting", "filled", "cancelled"]


class Owed(BaseModel):
    goodsId: str
    num: int


class Allocated(BaseModel):
    goodsId: str
    location: str
    num: int


class Deduction(Answer):
    flag: str
    outcome: Outcome = Field(
        description="deducted; duplicate (deducted before); insufficient (refused for lack of "
        "stock, now or before: final); voided; cancelled (deducted, then returned); unknown_flag"
    )
    lock: LockHold | None = None
    shortfalls: list[Shortfall] | None = None
    flows: list[Flow] | None = Field(
        None, description="deducted: the stock-flow rows committed (as GET /stockFlow returns)"
    )
    allocations: list[Allocated] | None = Field(
        None, description="deducted: where each line's units were taken from"
    )
    backordered: list[Owed] | None = Field(
        None, description="backordered: the units each line still waits for, in line"
    )


class FlagResult(Answer):
    flag: str
    outcome: Outcome = Field(
        description="as PUT /reduceStock/{flag} would answer it, and outcomes of this "
        "route alone: unknown_goods (goodsIds) and unknown_location (locations): what the "
        "single route answers 404; "
        "unavailable (error, dependency: what it answers 503; nothing written for this flag); "
        "not_attempted (error; lock, goodsId and retryAfter when its lock's queue was full), "
        "RETRYABLE: its lock was not had within the call's budget (DEDUCT_BATCH_BUDGET, at "
        "most half of X-Caller-Timeout-Ms), or its queue in the process was full "
        "(LOCK_QUEUE_MAX): nothing written, its flag still live; send it again under the same "
        "flag, alone or in a later batch"
    )
    flows: list[Flow] | None = None
    allocations: list[Allocated] | None = None
    backordered: list[Owed] | None = None
    shortfalls: list[Shortfall] | None = None
    goodsIds: list[str] | None = None
    locations: list[str] | None = Field(None, description="unknown_location: the unknown ones")
    error: str | None = None
    dependency: str | None = None
    lock: str | None = Field(None, description="not_attempted, its queue full: the lock")
    goodsId: str | None = Field(None, description="not_attempted, its queue full: its goods id")
    retryAfter: int | None = Field(None, description="not_attempted: seconds to wait, if any")


class BatchDeduction(Answer):
    results: list[FlagResult] = Field(description="one per flag, in the order sent")


class Flows(RootModel[list[Flow]]):
    """The stock-flow rows of one flag: empty until it was deducted."""


class FlagState(Answer):
    flag: str
    decision: Decided | None = Field(description="none yet: null")
    flows: list[Flow] = Field(description="the flows, when it was deducted (or returned)")
    allocations: list[Allocated] | None = Field(
        None, description="with the flows: where each line's units were taken from"
    )
    backorders: list[BackorderLine] | None = Field(
        None, description="a backordered flag's lines: owed, filled since, and their state"
    )


class Voided(Answer):
    flag: str
    outcome: Decided = Field(
        description="voided (now or before), or the decision found: deducted, returned "
        "(deducted, then its stock came back), refused (for lack of stock)"
    )
    flows: list[Flow] = Field(description="the flows, when it was deducted (or returned)")


class Return(BaseModel):
    id: str
    flag: str
    goodsId: str
    num: int
    fence: int | None
    createTime: str


class Returned(Answer):
    flag: str
    outcome: Literal["returned", "voided"] = Field(
        description="returned: its deduction's stock is back (now, or before: nothing twice); "
        "voided: nothing was deducted, and no deduction of it will ever be made"
    )
    returns: list[Return] = Field(description="the return rows, one per deducted line")


class LocationLevel(BaseModel):
    location: str
    num: int
    held: int


class StockLevel(Answer):
    goodsId: str
    num: int = Field(
        description="the level: the sum of its locations' levels (above MAX_STOCK_LEVEL when "
        "returns or transfers received lifted it there: no adjustment raises it further)"
    )
    held: int = Field(description="units in holds not paid yet (part of what was deducted)")
    locations: list[LocationLevel] = Field(
        description="each location's level and held units (the default location, and each "
        "named one that has held this goods id)"
    )
    inTransit: int = Field(description="units on their way between locations (transfers)")
    backorderLimit: int = Field(description="units it may owe at once (fill=backorder)")
    owed: int = Field(description="units it owes now, to lines waiting in order")
    lowStock: int | None = Field(description="the low-stock threshold, if set")
    seq: int = Field(description="the ledger's last entry (GET /stock/{goodsId}/history)")
    seededNum: int
    seedVersion: int
    fence: int


class LevelSet(Answer):
    goodsId: str
    num: int
    seedVersion: int


class FaultArmed(Answer):
    point: str
    value: int | float
    times: int


class UnknownGoods(ErrorBody):
    goodsIds: list[str]
