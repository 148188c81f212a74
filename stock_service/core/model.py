"""What a batch of the stock service is made of, as plain values: a request (a deduction, a
return, an adjustment), the decision each gets, its shortfalls and its ledger lines. The plan
that decides them is stock_service/core/plan.py."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shared.contract import Outcome
from stock_service.core.backorders import Bound


class Kind(enum.StrEnum):
    DEDUCT = "deduct"
    RETURN = "return"
    ADJUST = "adjust"
    TRANSFER = "transfer"


# The reasons an adjustment may give (POST /stock/{goodsId}/adjustments): `set` is an absolute
# level (the admin seed is one), the others are changes by a delta or, with the level the
# caller saw, to an absolute level (a compare-and-swap).
REASONS = ("restock", "damaged", "correction", "count", "set")


@dataclass(frozen=True)
class Adjustment:
    """A change of one goods id's level that is not an order's: by `delta`, or to `num`
    (only if the level is `expected`, when given: a compare-and-swap)."""

    goods_id: str
    reason: str
    delta: int | None = None
    num: int | None = None
    expected: int | None = None
    reference: str | None = None
    location: str | None = None  # where (and `expected` is that location's level); none: default


@dataclass(frozen=True)
class TransferLeg:
    """One step of a transfer of `units` of a goods id from one location to another: `out`
    (takes them out of `source`, in transit from then), `receive` (puts them in `target`) or
    `cancel` (puts them back in `source`). The last two are the transfer's in leg: one of them,
    once."""

    transfer_id: str
    step: str  # out, receive, cancel
    goods_id: str
    source: str
    target: str
    units: int
    reference: str


@dataclass(frozen=True)
class Shortfall:
    goods_id: str
    requested: int
    available: int
    # The seed version of the level it was refused against (set by the store): a checker
    # tells a lost sale from a refusal before the goods was seeded again.
    seed_version: int | None = None
    # fill=backorder refused past a limit: the limit that bound (core/backorders.py's Bound)
    bound: Bound | None = None


@dataclass(frozen=True)
class Request:
    """One PUT /reduceStock (the operation flag and the quantity per goods id; `hold`: a hold's
    units, held until paid), one return of a flag's stock (its lines: the flag's flows, read
    before the hold), or one adjustment (its id as the flag, its goods id as the one line)."""

    flag: str
    lines: Mapping[str, int]
    kind: Kind = Kind.DEDUCT
    hold: bool = False
    adjust: Adjustment | None = None
    # A deduction's lines that name their location (goods id -> location): from there alone.
    locations: Mapping[str, str] = field(default_factory=dict)
    # A deduction that takes what it can (fill=partial): refused only when nothing could be.
    partial: bool = False
    # A deduction that owes what is not on hand (fill=backorder), within the limit; a return
    # of a flag that did (its lines and parts are read again under the hold: decide.py).
    backorder: bool = False
    # A return's parts: where each goods id's units came from (goods id -> location -> units),
    # read with its lines before the hold; a goods id missing here came from the default.
    parts: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    transfer: TransferLeg | None = None


@dataclass(frozen=True)
class Entry:
    """One line of the ledger a plan writes: a goods id's level moved by `delta` to
    `level_after`, its `seq`-th entry; for request `index` of the batch."""

    index: int
    goods_id: str
    kind: str  # deducted, returned, adjusted
    delta: int
    level_after: int
    seq: int
    seed_version: int = 1  # the seed of the goods id this line belongs to
    # Where it moved units: (location, delta) per location, the locations in priority order.
    parts: tuple[tuple[str, int], ...] = ()
    flag: str | None = None  # a backorder's fill: the flag it fills (not the arriving request's)


@dataclass
class Decision:
    outcome: Outcome
    shortfalls: list[Shortfall] = field(default_factory=list)
    # The stock-flow rows a deduction committed (set once committed): the same rows GET
    # /stockFlow/{flag} returns, so the answer can carry them.
    flows: list[dict[str, Any]] = field(default_factory=list)
    level: int | None = None  # an adjustment's: the level after it, or the level that was stale
    # A deduction's: where its units came from, (goods id, location, units) per part.
    allocations: list[tuple[str, str, int]] = field(default_factory=list)
    transfer: str | None = None  # a transfer's state after this step
    backordered: dict[str, int] = field(default_factory=dict)  # goods id -> units owed
    entries: list[Entry] = field(default_factory=list)  # its lines of the ledger
    committed_at: Any = None  # the time of the commit that wrote it (set once committed)
