"""The order repository: the statements of a write transaction (add an order, a compare-and-set
of its status, the reconciler fence, remove a rejected order) and the reads (look an order up,
page through the orders a reconciler settles). Which write makes which move, in which unit of
work, is the service layer's (order_service/storage/transitions.py), as on the stock side."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, and_, delete, or_, select, update
from sqlalchemy.engine import Connection

from order_service.core.fills import ALL, Fill
from order_service.core.model import OrderRow, OrderState
from order_service.core.statuses import PENDING
from order_service.storage.fill_store import Lines, allocations_of, detail_rows, lines_of
from order_service.storage.statements import (
    DELETE_HOLD_RELEASE,
    FENCE_ADVANCE,
    FENCE_READ,
    FINISH,
    FINISH_GROUP,
    HOLD_RELEASES,
    INSERT_DETAILS,
    INSERT_HOLD_RELEASE,
    INSERT_ORDER,
    READ_STATE,
    READ_STATES,
    RECORD_SHORTFALL,
)
from order_service.storage.tables import order_details, orders
from shared.database.clock import database_now
from shared.database.engines import transaction
from shared.database.engines import utcnow as now
from shared.ids import new_id

DB = "order database"


class OrderWrite:
    """The statements of one write transaction of the order database (committed when
    `OrderStore.writing` ends normally, rolled back otherwise). What they mean for the order
    (which move wins, when a leader is deposed) is the service layer's: storage/transitions.py."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        # This host's clock, for the stamps no deadline is judged by (created_at,
        # updated_at), until the transaction reads the database's (`clock`).
        self.stamp = now()
        self._database_now: datetime | None = None

    def clock(self) -> datetime:
        """The database's time, read once in this transaction (on first use), and from then
        on this transaction's stamp too. Every deadline set and every "is it due" compare
        reads it: the hosts' own clocks differ (a host 2 s ahead answered `expired` to a
        DELETE another host then honoured), the database's is one for all. Read only by the
        transactions that set or compare a deadline, so a plain genOrder pays no round trip
        for it."""
        if self._database_now is None:
            self._database_now = database_now(self.conn)
            self.stamp = self._database_now
        return self._database_now

    def add(self, order: dict[str, Any], lines: dict[str, int], fill: Fill = ALL) -> None:
        """An order row and its details (a repeated idempotency key: IntegrityError)."""
        self.add_many([(order, lines, fill)])

    def add_many(self, placed: list[tuple[dict[str, Any], dict[str, int], Fill]]) -> None:
        """Order rows and their details, two statements for all (a repeated idempotency key:
        IntegrityError, nothing of them written once the transaction rolls back)."""
        at = {"created_at": self.stamp, "updated_at": self.stamp}
        self.conn.execute(INSERT_ORDER, [{**order, **at} for order, _, _ in placed])
        details = [
            {"id": new_id(), **row}
            for order, lines, fill in placed
            for row in detail_rows(order["id"], lines, fill)
        ]
        if details:  # none for a tombstone: a key cancelled before its order
            self.conn.execute(INSERT_DETAILS, details)

    def finish_pending(
        self, order_id: str, status: str, reason: str | None, hold_for: int | None = None
    ) -> bool:
        """PENDING -> `status`, a compare-and-set; False when the order was not PENDING.
        `hold_for`: a hold's seconds to pay in, counted from now (its deduction confirmed)."""
        deadline = self.deadline(hold_for)  # first: the stamp is the database's if it reads it
        params = {
            "order_id": order_id,
            "status": status,
            "reason": reason,
            "at": self.stamp,
            "deadline": deadline,
        }
        return bool(self.conn.execute(FINISH, params).rowcount)

    def deadline(self, hold_for: int | None) -> datetime | None:
        """A hold's deadline, if it starts now: by the database's clock."""
        return self.clock() + timedelta(seconds=hold_for) if hold_for else None

    def record_shortfall(self, order_id: str, goods_id: Any, available: Any, seed: Any) -> None:
        """What the stock service said was available of a line it refused."""
        self.record_shortfalls([(order_id, goods_id, available, seed)])

    def record_shortfalls(self, rows: list[tuple[str, Any, Any, Any]]) -> None:
        """(order id, goods id, available, seed version) of lines refused, in one statement."""
        if rows:
            self.conn.execute(
                RECORD_SHORTFALL,
                [
                    {"o": o, "g": g, "a": _int_or_none(a), "v": _int_or_none(v)}
                    for o, g, a, v in rows
                ],
            )

    def finish_group(
        self, ids: list[str], status: str, reason: str | None, hold_for: int | None
    ) -> int:
        """PENDING -> `status` for each of `ids` (a compare-and-set each); how many moved."""
        deadline = self.deadline(hold_for)  # first: the stamp is the database's if it reads it
        params = {
            "ids": ids,
            "status": status,
            "reason": reason,
            "at": self.stamp,
            "deadline": deadline,
        }
        return int(self.conn.execute(FINISH_GROUP, params).rowcount)

    def states(self, ids: list[str]) -> dict[str, OrderState]:
        return {
            r.id: OrderState(r.id, r.status, r.reason, r.pay_deadline, r.paid_at)
            for r in self.conn.execute(READ_STATES, {"ids": ids})
        }

    def compare_and_set(
        self,
        order_id: str,
        was: Sequence[str],
        status: str,
        reason: str | None,
        due: bool | None = None,
        hold_for: int | None = None,
        **values: Any,
    ) -> bool:
        """One of `was` -> `status`. `due`: only if the pay deadline has passed (True) or not
        yet (False) by the database's clock (`clock`); `hold_for`: a hold's seconds to pay in,
        its deadline set from now by the same clock. Whether it moved the row."""
        condition = and_(orders.c.id == order_id, orders.c.status.in_(list(was)))
        if due is not None:
            at = self.clock()
            passed = orders.c.pay_deadline <= at
            condition = and_(condition, passed if due else orders.c.pay_deadline > at)
        if hold_for:
            values["pay_deadline"] = self.deadline(hold_for)
        moved = self.conn.execute(
            update(orders)
            .where(condition)
            .values(status=status, reason=reason, updated_at=self.stamp, **values)
        ).rowcount
        return bool(moved == 1)

    def add_hold_release(self, order_id: str) -> None:
        self.conn.execute(INSERT_HOLD_RELEASE, {"order_id": order_id, "created_at": self.stamp})

    def remove_hold_release(self, order_id: str) -> None:
        self.conn.execute(DELETE_HOLD_RELEASE, {"o": order_id})

    def advance_fence(self, epoch: int, token: int) -> bool:
        """The reconciler fence up to (`epoch`, `token`), unless it is above it already
        (False)."""
        return bool(self.conn.execute(FENCE_ADVANCE, {"e": epoch, "t": token}).rowcount)

    def fence(self) -> tuple[int, int] | None:
        found = self.conn.execute(FENCE_READ).first()
        return (int(found.epoch), int(found.token)) if found else None

    def state(self, order_id: str) -> OrderState:
        return _found(self.conn, order_id)

    def remove_pending(self, order_id: str) -> bool:
        """Delete a PENDING order and its details; False (nothing deleted) when it moved on.
        The compare-and-set first takes the row's lock to the commit, so no cancel moves the
        order between the check and the deletes."""
        if not self.compare_and_set(order_id, (PENDING,), "REMOVED", None):
            return False
        self.conn.execute(delete(order_details).where(order_details.c.order_id == order_id))
        self.conn.execute(delete(orders).where(orders.c.id == order_id))
        return True


class OrderStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @contextmanager
    def writing(self) -> Iterator[OrderWrite]:
        """One write transaction: committed when the block ends normally, rolled back when it
        raises."""
        with transaction(self.engine, DB) as conn:
            yield OrderWrite(conn)

    # --- reads -----------------------------------------------------------------------------

    def page(
        self,
        status: str,
        before: datetime,
        after: tuple[datetime, str] | None,
        limit: int,
        by_deadline: bool = False,
    ) -> list[OrderRow]:
        """The next `limit` orders in `status` whose creation time (or, `by_deadline`, pay
        deadline) is before `before`, oldest first, after the (time, id) of the last one of the
        previous page. Two queries a page, on the (status, created_at) or (status,
        pay_deadline) index."""
        stamp_column = orders.c.pay_deadline if by_deadline else orders.c.created_at
        query = select(orders).where(orders.c.status == status, stamp_column < before)
        if after is not None:
            stamp, last_id = after
            query = query.where(
                or_(stamp_column > stamp, and_(stamp_column == stamp, orders.c.id > last_id))
            )
        query = query.order_by(stamp_column, orders.c.id).limit(limit)
        with transaction(self.engine, DB, read_only=True) as conn:
            rows = list(conn.execute(query).mappings())
            lines = lines_of(conn, [row["id"] for row in rows])
        return [_row(row, lines[row["id"]]) for row in rows]

    def pending_page(
        self, created_before: datetime, after: tuple[datetime, str] | None, limit: int
    ) -> list[OrderRow]:
        """The PENDING orders: the only ones whose outcome is unknown (a FAILED order was
        refused or voided by the stock database, and stays FAILED)."""
        return self.page(PENDING, created_before, after, limit)

    def hold_releases(self, before: datetime, limit: int) -> list[str]:
        """The paid holds whose release the stock service has not acknowledged, paid before
        `before`."""
        with transaction(self.engine, DB, read_only=True) as conn:
            params = {"before": before, "limit": limit}
            return [r.order_id for r in conn.execute(HOLD_RELEASES, params)]

    def get(self, order_id: str) -> OrderRow | None:
        return self._one(orders.c.id == order_id)

    def by_idempotency_key(self, key: str) -> OrderRow | None:
        return self._one(orders.c.idempotency_key == key)

    def _one(self, condition: Any) -> OrderRow | None:
        """An order, with its lines and the allocations it keeps."""
        with transaction(self.engine, DB, read_only=True) as conn:
            row = conn.execute(select(orders).where(condition)).mappings().first()
            if row is None:
                return None
            lines = lines_of(conn, [row["id"]])[row["id"]]
            allocations = allocations_of(conn, row["id"])
        return _row(row, lines, allocations)


def _found(conn: Any, order_id: str) -> OrderState:
    found = conn.execute(READ_STATE, {"order_id": order_id}).first()
    if found is None:
        raise LookupError(f"order {order_id} is not in the order database")
    return OrderState(order_id, found.status, found.reason, found.pay_deadline, found.paid_at)


def _row(row: Any, lines: Lines, allocations: tuple[tuple[str, str, int], ...] = ()) -> OrderRow:
    return OrderRow(
        row["id"],
        row["user_id"],
        row["status"],
        row["reason"],
        row["request_hash"],
        lines.units,
        row["created_at"],
        row["updated_at"],
        row["pay_deadline"],
        row["paid_at"],
        row["pay_within"],
        lines.fill(row["fill_mode"]),
        lines.filled,
        allocations,
    )


def _int_or_none(value: Any) -> int | None:
    """The stock service's numbers, taken only if they are numbers."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None
