"""The contract of the subscriptions' routes (docs/webhooks.md). The body's types are checked
by the schema (400); its rules (the URL, its host's addresses, the kinds, the goods ids, the
secret) by the route, answered 422 with the field at fault, as this API answers well-formed
input it will not act on. (No `from __future__ import annotations`: pydantic reads these
annotations at class creation.)"""

from typing import Annotated

from pydantic import BaseModel, Field

from shared.web.schemas import WHOLE, Answer, Identifier, Strict
from stock_service.core import EVENT_KINDS
from stock_service.webhooks import MAX_GOODS_IDS, SECRET_MAX, SECRET_MIN

KINDS = ", ".join(EVENT_KINDS)
EventId = Annotated[int, Field(ge=1, le=2**63 - 1), WHOLE]


class SubscriptionPath(BaseModel):
    subscriptionId: Identifier


class SubscriptionBody(Strict):
    url: str = Field(
        description="where the events are POSTed: http or https, at most 2048 characters, its "
        "host resolving to public addresses only (unless WEBHOOK_ALLOW_PRIVATE)",
        examples=["https://hooks.example.com/inventory"],
    )
    kinds: list[str] | None = Field(
        None, description=f"the event kinds wanted, of {KINDS}; none or empty: every kind"
    )
    goodsIds: list[str] | None = Field(
        None,
        description=f"the goods ids wanted, at most {MAX_GOODS_IDS}; none or empty: every one",
    )
    secret: str | None = Field(
        None,
        description=f"the HMAC key the deliveries are signed with, {SECRET_MIN}-{SECRET_MAX} "
        "characters without control characters; none: one is made (64 hex digits)",
    )


class Subscription(Answer):
    id: str = Field(description="the subscription's id (X-Inventory-Subscription)")
    url: str
    kinds: list[str] = Field(description="empty: every kind")
    goodsIds: list[str] = Field(description="empty: every goods id")
    createdAt: str = Field(description="UTC, ISO 8601; it gets the events written after it")


class SubscriptionMade(Subscription):
    secret: str = Field(description="the signing secret: told once, in this answer only")


class SubscriptionList(Answer):
    subscriptions: list[Subscription] = Field(description="oldest first, without secrets")


class DeadQuery(BaseModel):
    # Bounded by the column's type (BIGINT): a larger number is no id.
    after: int = Field(0, ge=0, le=2**63 - 1, description="the dead letters above this event id")
    limit: int = Field(100, ge=1, le=1000, description="dead letters in the page")


class DeadLetter(BaseModel):
    eventId: int = Field(description="the event's id (X-Inventory-Event-Id)")
    goodsId: str
    seq: int = Field(description="the goods id's ledger entry it tells of")
    kind: str
    attempts: int
    lastError: str | None = Field(description="the last attempt's error or HTTP status")
    firstTriedAt: str | None
    deadAt: str | None


class DeadLetters(Answer):
    failed: list[DeadLetter] = Field(description="in event id order")
    next: int = Field(description="`after` for the next page (this one's last id, or `after`)")


class ReplayBody(Strict):
    eventIds: list[EventId] | None = Field(
        None,
        max_length=1000,
        description="the dead letters to send again; none: every one of the subscription",
    )


class Replayed(Answer):
    replayed: int = Field(description="dead letters made pending again (unknown ids: none)")
