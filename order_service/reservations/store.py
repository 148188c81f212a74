"""The order database's reservations: their rows, and every move of one as a compare-and-set on
its `state` (the only way a state changes), each in its own transaction of the order database.

    pending --(its deduction decided: deducted)--> held (expires_at: then + ttl_seconds)
    pending --(refused, voided, no flag written)--> failed
    pending --release (outcome unknown: the return voids it)--> released
    held --consume, before expires_at--> consumed (its order, of the same id)
    held --release, before expires_at--> released
    held --expire, at or past expires_at (the elected reconciler)--> expired

`held` leaves by exactly one of consume, release and expire: each is an UPDATE whose WHERE
names the state it leaves, so of two racing writers the row lock lets one through and the
other finds the row moved (rowcount 0); consume and release also hold only while expires_at
has not passed, expire only once it has, each by the database's clock read in its writing
transaction (OrderWrite.clock), as a hold's pay and expiry, and expires_at is set by the same
clock: past its expires_at a held reservation can only expire, whichever host asks (each
host's own clock differs from the others'). A consume is
written in the same transaction as its order (order_service/reservations/orders.py). A
released or expired reservation owes its units until `returned_at` is set, once the stock
service answered the return; the return itself is idempotent per flag on the stock side, so
asking again is safe.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, delete, insert, or_, select, update
from sqlalchemy.engine import Connection

from order_service.core.buyer_limits import LimitExceeded, Wanted
from order_service.storage.buyer_limits import BuyerRules, retried
from order_service.storage.store import DB, OrderStore, OrderWrite
from order_service.storage.tables import reservation_lines, reservations
from order_service.storage.transitions import Fence, fenced
from shared.database.engines import transaction
from shared.metrics import RESERVATIONS

PENDING, HELD, FAILED = "pending", "held", "failed"
CONSUMED, RELEASED, EXPIRED = "consumed", "released", "expired"
STATES = (PENDING, HELD, FAILED, CONSUMED, RELEASED, EXPIRED)
# The states whose units are owed back until the stock service took them (returned_at).
OWING = (RELEASED, EXPIRED)
EXPIRED_UNUSED = "expired: neither consumed nor released in time"
_R, _L = reservations.c, reservation_lines.c


@dataclass(frozen=True)
class Reservation:
    id: str
    user_id: str | None
    state: str
    reason: str | None
    ttl_seconds: int
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None
    returned_at: datetime | None = None
    allocations: tuple[dict[str, Any], ...] = ()  # as the stock service answered them
    lines: Mapping[str, int] = field(default_factory=dict)
    locations: Mapping[str, str] = field(default_factory=dict)
    request_hash: str | None = None  # the fingerprint of the POST that made it, under a key

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "reservationId": self.id,
            "userId": self.user_id,
            "state": self.state,
            "reason": self.reason,
            "ttlSeconds": self.ttl_seconds,
            "expiresAt": self.expires_at.isoformat() if self.expires_at else None,
            "createTime": self.created_at.isoformat(),
            "updateTime": self.updated_at.isoformat(),
            "items": [
                {"goodsId": g, "num": n, **_named(g, self.locations)}
                for g, n in sorted(self.lines.items())
            ],
            "allocations": list(self.allocations),
        }
        if self.state == CONSUMED:
            body["orderId"] = self.id  # the order made of it has its id
        if self.state in OWING:
            body["unitsReturned"] = self.returned_at is not None
        return body


def _named(goods_id: str, locations: Mapping[str, str]) -> dict[str, str]:
    return {"location": locations[goods_id]} if goods_id in locations else {}


class ReservationStore:
    """Reservations in the order database, written through the order store's transactions
    (so a reconciler's write moves the reconciler fence in the same one)."""

    def __init__(self, orders: OrderStore, rules: BuyerRules | None = None) -> None:
        self.orders = orders
        self.rules = rules  # the flash-sale rules per buyer (storage/buyer_limits.py)

    @contextmanager
    def writing(self, fence: Fence | None = None) -> Iterator[OrderWrite]:
        with self.orders.writing() as write:
            fenced(write, fence)
            yield write

    def create(
        self,
        reservation_id: str,
        user_id: str | None,
        lines: Mapping[str, int],
        locations: Mapping[str, str],
        ttl: int,
        key: tuple[str, str] | None = None,
    ) -> None:
        """The reservation `pending`, with its lines, in one transaction: before its flag is
        written and its deduction asked for, so nothing is ever held for a row that is not.
        `key`: its Idempotency-Key and request fingerprint (IntegrityError: the key is taken).
        A buyer's units past a goods id's maxHeld: LimitExceeded, nothing written (judged in
        this transaction, under the buyer's row's lock: storage/buyer_limits.py)."""
        retried(
            self.orders, lambda: self._create(reservation_id, user_id, lines, locations, ttl, key)
        )

    def _create(
        self,
        reservation_id: str,
        user_id: str | None,
        lines: Mapping[str, int],
        locations: Mapping[str, str],
        ttl: int,
        key: tuple[str, str] | None,
    ) -> None:
        with self.writing() as write:
            if self.rules is not None and user_id is not None:
                wanted = Wanted(reservation_id, user_id, lines, orders=False, holds=True)
                refused = self.rules.check(write.conn, [wanted])
                if refused:
                    raise LimitExceeded(refused[reservation_id])
            write.conn.execute(
                insert(reservations),
                {
                    "id": reservation_id,
                    "user_id": user_id,
                    "state": PENDING,
                    "ttl_seconds": ttl,
                    "idempotency_key": key[0] if key else None,
                    "request_hash": key[1] if key else None,
                    "created_at": write.stamp,
                    "updated_at": write.stamp,
                },
            )
            write.conn.execute(
                insert(reservation_lines),
                [
                    {"reservation_id": reservation_id, "goods_id": g, "num": n}
                    | {"location": locations.get(g)}
                    for g, n in sorted(lines.items())
                ],
            )

    def move(
        self,
        reservation_id: str,
        was: Collection[str],
        to: str,
        reason: str | None,
        fence: Fence | None = None,
        due: bool | None = None,
        hold_for: int | None = None,
        allocations: list[Any] | None = None,
    ) -> tuple[bool, Reservation | None]:
        """One of `was` -> `to`, a compare-and-set. `due`: only once expires_at has passed
        (True) or while it has not (False) by the database's clock; `hold_for`: held from
        now, by the same clock, for so many seconds. Whether it moved, and the reservation
        after (None: gone)."""
        with self.writing(fence) as write:
            values: dict[str, Any] = {}
            if due is not None or hold_for is not None:
                write.clock()  # the database's time: this transaction's stamp from here
            if hold_for is not None:
                values["expires_at"] = write.stamp + timedelta(seconds=hold_for)
            if allocations is not None:
                values["allocations"] = json.dumps(allocations)
            moved = compare_and_set(
                write.conn, reservation_id, was, to, reason, write.stamp, due, **values
            )
            # Not moved: read under the row's lock. A compare-and-set refused by its clock
            # alone (past expires_at) does not wait for a move in flight, and without the
            # lock it would read `held` while a release that began in time is about to
            # commit: a DELETE answered "expired" of a reservation that ends released.
            after = read(write.conn, reservation_id, locked=not moved)
        if moved:
            RESERVATIONS.labels(to).inc()
        return moved, after

    def returned(self, reservation_id: str, what: str, fence: Fence | None = None) -> bool:
        """A released or expired reservation's units are back (or its flag voided: nothing
        had been deducted): recorded once, `what` added to its reason."""
        with self.writing(fence) as write:
            found = read(write.conn, reservation_id, lines=False)
            if found is None or found.returned_at is not None:
                return False
            reason = f"{found.reason or found.state} ({what})"[:200]
            condition = and_(_R.id == reservation_id, _R.state.in_(OWING), _R.returned_at.is_(None))
            return bool(
                write.conn.execute(
                    update(reservations)
                    .where(condition)
                    .values(returned_at=write.stamp, reason=reason, updated_at=write.stamp)
                ).rowcount
            )

    def remove_pending(self, reservation_id: str) -> bool:
        """A reservation the stock service refused as invalid (unknown goods or locations):
        nothing of it kept, unless it moved on meanwhile (a release took it)."""
        with self.writing() as write:
            if not compare_and_set(
                write.conn, reservation_id, (PENDING,), "removed", None, write.stamp
            ):
                return False
            write.conn.execute(delete(reservation_lines).where(_L.reservation_id == reservation_id))
            write.conn.execute(delete(reservations).where(_R.id == reservation_id))
            return True

    # --- reads -----------------------------------------------------------------------------

    def get(self, reservation_id: str) -> Reservation | None:
        with transaction(self.orders.engine, DB, read_only=True) as conn:
            return read(conn, reservation_id)

    def by_key(self, key: str) -> Reservation | None:
        """The reservation made under an Idempotency-Key, with its lines."""
        with transaction(self.orders.engine, DB, read_only=True) as conn:
            found = conn.execute(select(_R.id).where(_R.idempotency_key == key)).scalar()
            return read(conn, found) if found is not None else None

    def page(
        self,
        states: Collection[str],
        before: datetime,
        after: tuple[datetime, str] | None,
        limit: int,
        by_expiry: bool = False,
        owing: bool = False,
    ) -> list[Reservation]:
        """The next `limit` reservations in `states` last moved (or, `by_expiry`, expiring)
        before `before`, oldest first, after the (time, id) of the previous page's last;
        `owing`: only those whose units are not back yet. Their lines are not read."""
        column = _R.expires_at if by_expiry else _R.updated_at
        query = select(reservations).where(_R.state.in_(list(states)), column <= before)
        if owing:
            query = query.where(_R.returned_at.is_(None))
        if after is not None:
            stamp, last = after
            query = query.where(or_(column > stamp, and_(column == stamp, _R.id > last)))
        query = query.order_by(column, _R.id).limit(limit)
        with transaction(self.orders.engine, DB, read_only=True) as conn:
            return [_reservation(row) for row in conn.execute(query).mappings()]


def compare_and_set(
    conn: Connection,
    reservation_id: str,
    was: Collection[str],
    to: str,
    reason: str | None,
    stamp: datetime,
    due: bool | None = None,
    **values: Any,
) -> bool:
    """The reservation from one of `was` to `to`, `values` set with it (`due`: see
    ReservationStore.move, compared with `stamp`, which must then be the database's time:
    OrderWrite.clock); whether this statement moved it. The one statement by which a
    reservation's state changes."""
    condition = and_(_R.id == reservation_id, _R.state.in_(list(was)))
    if due is not None:
        condition = and_(condition, _R.expires_at <= stamp if due else _R.expires_at > stamp)
    values.update(state=to, reason=reason and reason[:200], updated_at=stamp)
    return bool(conn.execute(update(reservations).where(condition).values(values)).rowcount == 1)


def read(
    conn: Connection, reservation_id: str, lines: bool = True, locked: bool = False
) -> Reservation | None:
    """`locked`: read under the row's lock (FOR UPDATE), so a move another transaction has
    made and not committed yet is waited for and seen."""
    query = select(reservations).where(_R.id == reservation_id)
    if locked:
        query = query.with_for_update()
    row = conn.execute(query).mappings().first()
    if row is None:
        return None
    found = _reservation(row)
    if not lines:
        return found
    units, places = {}, {}
    for line in conn.execute(select(reservation_lines).where(_L.reservation_id == found.id)):
        units[line.goods_id] = line.num
        if line.location is not None:
            places[line.goods_id] = line.location
    return Reservation(**{**found.__dict__, "lines": units, "locations": places})


def _reservation(row: Any) -> Reservation:
    return Reservation(
        row["id"],
        row["user_id"],
        row["state"],
        row["reason"],
        row["ttl_seconds"],
        row["created_at"],
        row["updated_at"],
        row["expires_at"],
        row["returned_at"],
        tuple(json.loads(row["allocations"])) if row["allocations"] else (),
        request_hash=row["request_hash"],
    )
