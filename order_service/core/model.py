"""What an order is, with no database and no HTTP: the rows a repository returns, a request to
place one and what placing it came to (its statuses and reasons: statuses.py; what its fill
makes of a stock answer: fills.py).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

from order_service.core.fills import ALL, Fill, Filled, answer_fields, items_json, owed_json
from order_service.core.statuses import BACKORDERED, CANCELLED, FAILED, deducted_status


@dataclass(frozen=True)
class OrderState:
    """An order's status as a write left it, or as it was found when the write had nothing to
    move (another writer moved it first): what an answer is made from."""

    id: str
    status: str
    reason: str | None
    pay_deadline: datetime | None = None
    paid_at: datetime | None = None


@dataclass(frozen=True)
class OrderRow:
    id: str
    user_id: str
    status: str
    reason: str | None
    request_hash: str | None
    lines: dict[str, int]
    created_at: datetime
    updated_at: datetime
    pay_deadline: datetime | None = None
    paid_at: datetime | None = None
    pay_within: int | None = None  # a hold: seconds to pay in, from its confirmation
    fill: Fill = ALL  # partial, and the lines' locations (order_service/core/fills.py)
    filled: Mapping[str, int | None] = field(default_factory=dict)  # recorded per line
    allocations: tuple[tuple[str, str, int], ...] = ()  # (goods id, location, units)

    @property
    def state(self) -> OrderState:
        return OrderState(self.id, self.status, self.reason, self.pay_deadline, self.paid_at)

    @property
    def tombstone(self) -> bool:
        """A cancel by key that came before any order under the key (no request, no lines)."""
        return self.request_hash is None and not self.lines and self.status == CANCELLED

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "orderId": self.id,
            "userId": self.user_id,
            "status": self.status,
            "reason": self.reason,
            "items": items_json(self.lines, self.fill, self.filled, self.status == FAILED),
            "createTime": self.created_at.isoformat(),
            "updateTime": self.updated_at.isoformat(),
        }
        if self.pay_deadline is not None:
            body["payBy"] = self.pay_deadline.isoformat()
        if self.paid_at is not None:
            body["paidTime"] = self.paid_at.isoformat()
        if not self.fill.plain:
            body["fill"] = self.fill.mode
        if self.allocations:
            body["allocations"] = Filled({}, self.allocations).allocations_json()
        if self.status == BACKORDERED:
            body["backordered"] = owed_json(self.lines, self.filled)
        return body

    def answer_fields(self) -> dict[str, Any]:
        """What genOrder's answer adds for it (a repeat of its Idempotency-Key)."""
        failed, owing = self.status == FAILED, self.status == BACKORDERED
        return answer_fields(self.lines, self.fill, self.filled, self.allocations, failed, owing)


@dataclass(frozen=True)
class OrderRequest:
    user_id: str
    lines: dict[str, int]
    # A hold: seconds to pay in, counted from the deduction's confirmation; unpaid by then,
    # it is cancelled and its stock returned.
    pay_within: int | None = None
    fill: Fill = ALL  # partial, and the lines' locations (order_service/core/fills.py)
    reservation_id: str | None = None  # made of this reservation (reservations/orders.py)

    @property
    def confirmed(self) -> str:
        """The status of this order once its stock is deducted."""
        return deducted_status(self.pay_within)

    @cached_property
    def fingerprint(self) -> str:
        """What an Idempotency-Key's repeat must ask again, hashed (computed once)."""
        fields: dict[str, object] = {"userId": self.user_id, "lines": self.lines}
        if self.pay_within:
            fields["payWithin"] = self.pay_within
        fields.update(self.fill.fingerprint())  # nothing for a plain order
        if self.reservation_id:
            fields["reservationId"] = self.reservation_id
        canonical = json.dumps(fields, sort_keys=True)
        return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class Placement:
    """How an order ended for this request: its state, and what the buyer should be told
    beyond it."""

    order: OrderState
    replayed: bool = False  # a repeat of an Idempotency-Key: the first request's order
    unavailable: str | None = None  # the dependency whose failure decided or left the outcome
    shortfalls: list[Any] = field(default_factory=list)
    batch: int = 0  # the orders placed in its batch (0: none, a repeat of a key)
    # An order that asked for a fill or a location: its `fill`, lines with what was filled;
    # and the allocations the stock service answered (order_service/core/fills.py, answer_fields)
    fields: dict[str, Any] = field(default_factory=dict)


class IdempotencyKeyReused(Exception):
    """The key was used with another request: nothing placed."""

    def __init__(self, order_id: str) -> None:
        super().__init__("Idempotency-Key was already used with a different request")
        self.order_id = order_id


class OrderRemoved(Exception):
    """A repeat of an Idempotency-Key whose order was rejected by the stock service (unknown
    goods) and removed meanwhile: nothing was deducted, and nothing is kept under the key."""

    def __init__(self, order_id: str | None) -> None:
        super().__init__(
            "the order placed under this Idempotency-Key was rejected by the stock service "
            "(unknown goods) and removed: nothing was deducted; sent again, it is placed anew"
        )
        self.order_id = order_id


class StockRejected(Exception):
    """The stock service knows none of some of the order's own goods ids, or of the locations
    its lines name: nothing of the order is kept."""

    def __init__(
        self,
        message: str,
        unknown_goods: list[str] | None,
        unknown_locations: list[str] | None = None,
    ) -> None:
        super().__init__(message)
        self.unknown_goods = unknown_goods
        self.unknown_locations = unknown_locations  # lines naming locations it has not

    @classmethod
    def of(cls, status: int | None, body: Any) -> StockRejected:
        """From reduceStock's refusal: its 404 names the goods ids, or else the locations."""
        body = body if isinstance(body, dict) else {}
        message = str(body.get("error") or "rejected by the stock service")
        unknown = body.get("goodsIds") if status == 404 else None
        places = body.get("locations") if status == 404 else None
        return cls(
            message,
            list(unknown) if unknown is not None else None,
            list(places) if places is not None and unknown is None else None,
        )
