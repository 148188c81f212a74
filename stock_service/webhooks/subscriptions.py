"""The subscriptions as the admin sees them (POST, GET, DELETE /subscriptions): their rules,
their rows, and their dead letters listed and replayed. Each call is one transaction.

A subscription sees the events written after it was made: its fan-out cursor starts at the
outbox's last id. Deleting one deletes its delivery rows with it (pending ones are not sent;
a POST already in flight may still arrive)."""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, and_, delete, func, insert, select, update

from shared.database.clock import database_now
from shared.database.engines import transaction
from shared.ids import new_id
from stock_service.core import EVENT_KINDS
from stock_service.storage import stock_outbox, webhook_delivery, webhook_subscription
from stock_service.webhooks.addresses import Resolve, resolve, url_problem

DB = "stock database"
MAX_GOODS_IDS = 1000
SECRET_MIN, SECRET_MAX = 16, 256
GOODS_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")  # shared.web.schemas.IDENTIFIER_PATTERN
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
PENDING, DELIVERED, DEAD = "pending", "delivered", "dead"
s, d = webhook_subscription.c, webhook_delivery.c


@dataclass(frozen=True)
class Refused(Exception):
    """A subscription this service will not keep: the field at fault and why."""

    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.field}: {self.reason}"


def check(
    url: str,
    kinds: Sequence[str],
    goods_ids: Sequence[str],
    secret: str | None,
    allow_private: bool,
    resolve: Resolve = resolve,
) -> None:
    """Raises Refused for the first rule the subscription breaks (the cheap ones first, the
    name's resolution last)."""
    for kind in kinds:
        if kind not in EVENT_KINDS:
            raise Refused("kinds", f"{kind!r} is no event kind; one of {', '.join(EVENT_KINDS)}")
    if len(goods_ids) > MAX_GOODS_IDS:
        raise Refused("goodsIds", f"at most {MAX_GOODS_IDS} goods ids (none: every goods id)")
    for goods_id in goods_ids:
        if not GOODS_ID.match(goods_id):
            raise Refused(
                "goodsIds", f"{goods_id[:80]!r} is no goods id: 1-64 letters, digits or _ . : -"
            )
    if secret is not None:
        if not SECRET_MIN <= len(secret) <= SECRET_MAX:
            raise Refused("secret", f"must be {SECRET_MIN} to {SECRET_MAX} characters")
        if CONTROL.search(secret):
            raise Refused("secret", "must have no control characters")
    problem = url_problem(url, allow_private, resolve)
    if problem:
        raise Refused("url", problem)


def _joined(values: Sequence[str]) -> str:
    return ",".join(dict.fromkeys(values))  # repeats dropped, the order kept


def _split(text: str) -> list[str]:
    return text.split(",") if text else []


def _time(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat() + "Z"


def subscription_fields(row: Any) -> dict[str, Any]:
    """A subscription as the routes answer it (never its secret)."""
    return {
        "id": row.id,
        "url": row.url,
        "kinds": _split(row.kinds),
        "goodsIds": _split(row.goods_ids),
        "createdAt": _time(row.created_at),
    }


def dead_fields(row: Any) -> dict[str, Any]:
    return {
        "eventId": int(row.event_id),
        "goodsId": row.goods_id,
        "seq": int(row.seq),
        "kind": row.kind,
        "attempts": int(row.attempts),
        "lastError": row.last_error,
        "firstTriedAt": _time(row.first_tried_at),
        "deadAt": _time(row.done_at),
    }


class Subscriptions:
    """The subscriptions' rows, for the admin routes."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def create(
        self, url: str, kinds: Sequence[str], goods_ids: Sequence[str], secret: str | None
    ) -> dict[str, Any]:
        """A new subscription (checked by the caller: `check`), and its secret: the only
        answer that carries it."""
        secret = secret or secrets.token_hex(32)
        with transaction(self.engine, DB) as conn:
            now = database_now(conn)
            last = conn.execute(select(func.max(stock_outbox.c.id))).scalar_one_or_none() or 0
            row: dict[str, Any] = {
                "id": new_id(),
                "url": url,
                "secret": secret,
                "kinds": _joined(kinds),
                "goods_ids": _joined(goods_ids),
                "fanned_to": int(last),
                "created_at": now,
            }
            conn.execute(insert(webhook_subscription).values(**row))
        return {
            "id": row["id"],
            "url": url,
            "kinds": _split(row["kinds"]),
            "goodsIds": _split(row["goods_ids"]),
            "secret": secret,
            "createdAt": _time(now),
        }

    def all(self) -> list[dict[str, Any]]:
        with transaction(self.engine, DB, read_only=True) as conn:
            rows = conn.execute(select(webhook_subscription).order_by(s.created_at, s.id))
            return [subscription_fields(r) for r in rows]

    def one(self, subscription_id: str) -> dict[str, Any] | None:
        with transaction(self.engine, DB, read_only=True) as conn:
            row = conn.execute(
                select(webhook_subscription).where(s.id == subscription_id)
            ).one_or_none()
        return None if row is None else subscription_fields(row)

    def delete(self, subscription_id: str) -> bool:
        """Deleted with its deliveries; False when there was none of that id."""
        with transaction(self.engine, DB) as conn:
            gone = conn.execute(delete(webhook_subscription).where(s.id == subscription_id))
            conn.execute(delete(webhook_delivery).where(d.subscription_id == subscription_id))
            return bool(gone.rowcount)

    def dead(self, subscription_id: str, after: int, limit: int) -> list[dict[str, Any]] | None:
        """Its dead letters with an event id above `after`, in event id order; None when
        there is no such subscription."""
        with transaction(self.engine, DB, read_only=True) as conn:
            if conn.execute(select(s.id).where(s.id == subscription_id)).first() is None:
                return None
            rows = conn.execute(
                select(webhook_delivery)
                .where(
                    d.subscription_id == subscription_id,
                    d.state == DEAD,
                    d.event_id > after,
                )
                .order_by(d.event_id)
                .limit(limit)
            )
            return [dead_fields(r) for r in rows]

    def replay(self, subscription_id: str, event_ids: Sequence[int] | None) -> int | None:
        """Its dead letters (those of `event_ids`, or all) pending again, from their first
        attempt: how many. None when there is no such subscription."""
        with transaction(self.engine, DB) as conn:
            if conn.execute(select(s.id).where(s.id == subscription_id)).first() is None:
                return None
            where = and_(d.subscription_id == subscription_id, d.state == DEAD)
            if event_ids is not None:
                if not event_ids:
                    return 0
                where = and_(where, d.event_id.in_(list(event_ids)))
            moved = conn.execute(
                update(webhook_delivery)
                .where(where)
                .values(
                    state=PENDING,
                    attempts=0,
                    next_attempt_at=database_now(conn),
                    first_tried_at=None,
                    done_at=None,
                )
            )
            return int(moved.rowcount)
