"""The flash-sale rules' rows (docs/buyer-limits.md): a goods id's limits, and the check run inside
the transaction that creates orders or a reservation.

The check, in the creating transaction, before anything of the requests is written:
1. the limits of their goods ids (one SELECT; none and no BUYER_MAX_HELD_DEFAULT: done);
2. a row per (buyer, goods id) under a rule locked (SELECT ... FOR UPDATE), in sorted order:
   two transactions of one buyer for one goods id are decided one after the other (on
   PostgreSQL and MariaDB by the row lock; on SQLite every write transaction is BEGIN
   IMMEDIATE, one at a time). A row not there yet (a buyer's first order of the goods id):
   the transaction is rolled back, the row written in a short transaction of its own, and the
   transaction run again (`retried`); so is a deadlock's victim;
3. what each buyer has: the units of the goods id in its orders not FAILED or CANCELLED, and
   held in its pending or held reservations and unpaid holds, counted from the rows under the
   lock (READ COMMITTED on PostgreSQL and MariaDB: each statement sees the latest commits, the
   previous holder's included);
4. core/buyer_limits.py's judge, in the requests' order.
A cancel or a failure changes an order's status and nothing here: the next count sees it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from prometheus_client import Counter
from sqlalchemy import and_, case, func, or_, select
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from order_service.core.buyer_limits import (
    LimitRefusal,
    Limits,
    Pair,
    Wanted,
    judge,
    limited_pairs,
)
from order_service.core.statuses import AWAITING_PAYMENT, CANCELLED, FAILED, PENDING
from order_service.storage.store import DB, OrderStore
from order_service.storage.tables import (
    buyer_goods,
    buyer_limits,
    order_details,
    orders,
    reservation_lines,
    reservations,
)
from shared.database.engines import transaction, utcnow

log = logging.getLogger(__name__)
T = TypeVar("T")
ATTEMPTS = 5  # a creating transaction's runs: its rows written once, a deadlock or more

LIMIT_REFUSALS = Counter(
    "buyer_limit_refusals_total",
    "Requests refused by a flash-sale rule per buyer, by reason (limit_per_buyer, limit_held)",
    ["reason"],
)
# The reservations' states whose units are held (order_service/reservations/store.py).
HELD_STATES = ("pending", "held")
_O, _D = orders.c, order_details.c


class BuyerRules:
    """The rules' reads and writes, and the check of a creating transaction."""

    def __init__(self, held_default: int | None = None) -> None:
        self.held_default = held_default

    def check(self, conn: Connection, wanted: list[Wanted]) -> dict[str, LimitRefusal]:
        """The requests refused (by key), judged in order under the buyers' rows' locks, in
        the caller's transaction (see the module); MissingRows (the caller's transaction to
        roll back and run again through `retried`) when some rows are not written yet."""
        goods_ids = sorted({g for w in wanted if w.user_id is not None for g in w.lines})
        if not goods_ids:
            return {}
        limits = read_limits(conn, goods_ids)
        if not limits and self.held_default is None:
            return {}
        pairs = limited_pairs(wanted, limits, self.held_default)
        if not pairs:
            return {}
        missing = sorted(set(pairs) - lock(conn, pairs))
        if missing:  # written in a transaction of their own, then this one again: `retried`
            raise MissingRows(missing)
        had = units_had(conn, pairs) if any(w.orders for w in wanted) else {}
        held = units_held(conn, pairs) if any(w.holds for w in wanted) else {}
        return judge(wanted, limits, self.held_default, had, held)

    def put(self, store: OrderStore, goods_id: str, limits: Limits) -> Limits:
        """A goods id's rules replaced (both None: the row removed, no rule)."""
        with store.writing() as write:
            conn = write.conn
            conn.execute(buyer_limits.delete().where(buyer_limits.c.goods_id == goods_id))
            if limits.per_buyer is not None or limits.max_held is not None:
                conn.execute(
                    buyer_limits.insert(),
                    {
                        "goods_id": goods_id,
                        "per_buyer": limits.per_buyer,
                        "max_held": limits.max_held,
                        "updated_at": write.stamp,
                    },
                )
        return limits

    def get(self, store: OrderStore, goods_id: str) -> Limits:
        with transaction(store.engine, DB, read_only=True) as conn:
            return read_limits(conn, [goods_id]).get(goods_id, Limits())


def read_limits(conn: Connection, goods_ids: Iterable[str]) -> dict[str, Limits]:
    rows = conn.execute(
        select(buyer_limits).where(buyer_limits.c.goods_id.in_(list(goods_ids)))
    ).mappings()
    return {r["goods_id"]: Limits(_int(r["per_buyer"]), _int(r["max_held"])) for r in rows}


def lock(conn: Connection, pairs: list[Pair]) -> set[Pair]:
    """The (buyer, goods id) rows of `pairs` locked to the commit (SELECT ... FOR UPDATE, in
    their sorted order: two transactions never wait for each other in a circle); those found.
    Only existing rows are locked here: a transaction that inserted them (taking gap and insert
    intention locks on MariaDB) deadlocked with its neighbours in a crowd of new buyers."""
    if not pairs:
        return set()
    _G = buyer_goods.c
    rows = conn.execute(
        select(_G.user_id, _G.goods_id)
        .where(_among(_G.user_id, _G.goods_id, pairs))
        .order_by(_G.user_id, _G.goods_id)
        .with_for_update()
    ).all()
    return {(r[0], r[1]) for r in rows}


def write_rows(store: OrderStore, pairs: list[Pair]) -> None:
    """The rows of `pairs` written if absent, in a short transaction of their own (committed
    before the transaction that locks them begins; a row is never deleted)."""
    values = [{"user_id": u, "goods_id": g, "created_at": utcnow()} for u, g in pairs]
    with store.writing() as write:
        conn = write.conn
        name = conn.dialect.name
        if name == "postgresql":
            conn.execute(postgresql.insert(buyer_goods).values(values).on_conflict_do_nothing())
        elif name in ("mysql", "mariadb"):
            conn.execute(mysql.insert(buyer_goods).values(values).prefix_with("IGNORE"))
        else:
            conn.execute(sqlite.insert(buyer_goods).values(values).on_conflict_do_nothing())


class MissingRows(Exception):
    """The transaction needs (buyer, goods id) rows not written yet: nothing of it kept."""

    def __init__(self, pairs: list[Pair]) -> None:
        super().__init__(f"{len(pairs)} buyer rows to write first")
        self.pairs = pairs


def retried(store: OrderStore, run: Callable[[], T]) -> T:
    """`run`, a transaction that creates orders or a reservation and calls BuyerRules.check,
    run again once the buyers' rows it lacked are written (write_rows), or after the database
    chose it as a deadlock's victim (rolled back whole: nothing of it committed)."""
    for attempt in range(ATTEMPTS):
        try:
            return run()
        except MissingRows as missing:
            write_rows_retried(store, missing.pairs)
        except DBAPIError as exc:
            if not is_deadlock(exc) or attempt == ATTEMPTS - 1:
                raise
            log.info("a creating transaction was a deadlock's victim: run again")
    return run()


def write_rows_retried(store: OrderStore, pairs: list[Pair]) -> None:
    for attempt in range(ATTEMPTS):
        try:
            write_rows(store, pairs)
            return
        except DBAPIError as exc:
            if not is_deadlock(exc) or attempt == ATTEMPTS - 1:
                raise


def is_deadlock(exc: DBAPIError) -> bool:
    """PostgreSQL's deadlock_detected (40P01), MariaDB's and MySQL's 1213."""
    number = exc.orig.args[0] if exc.orig is not None and exc.orig.args else None
    return getattr(exc.orig, "sqlstate", None) == "40P01" or number == 1213


def _among(user: Any, goods: Any, pairs: list[Pair]) -> Any:
    """(user, goods) is one of `pairs`: an OR of ANDs, which every database plans as lookups
    on the index whose leading columns they are."""
    return or_(*(and_(user == u, goods == g) for u, g in pairs))


def units_had(conn: Connection, pairs: list[Pair]) -> dict[Pair, int]:
    """The units of each (buyer, goods id) in the buyer's orders not FAILED or CANCELLED (a
    partial fill's confirmed line: what it filled). One statement."""
    units = case(
        (and_(_O.fill_mode == "partial", _D.filled.is_not(None)), _D.filled),
        else_=_D.goods_num,
    )
    query = (
        select(_O.user_id, _D.goods_id, func.sum(units))
        .select_from(orders.join(order_details, _D.order_id == _O.id))
        .where(_among(_O.user_id, _D.goods_id, pairs), _O.status.not_in([FAILED, CANCELLED]))
        .group_by(_O.user_id, _D.goods_id)
    )
    return _by_pair(pairs, conn.execute(query).all())


def units_held(conn: Connection, pairs: list[Pair]) -> dict[Pair, int]:
    """The units of each (buyer, goods id) held: in its pending or held reservations, and in
    its unpaid holds (orders with payWithinSeconds, PENDING or AWAITING_PAYMENT). Two
    statements."""
    _R, _L = reservations.c, reservation_lines.c
    reserved = (
        select(_R.user_id, _L.goods_id, func.sum(_L.num))
        .select_from(reservations.join(reservation_lines, _L.reservation_id == _R.id))
        .where(_among(_R.user_id, _L.goods_id, pairs), _R.state.in_(HELD_STATES))
        .group_by(_R.user_id, _L.goods_id)
    )
    holds = (
        select(_O.user_id, _D.goods_id, func.sum(_D.goods_num))
        .select_from(orders.join(order_details, _D.order_id == _O.id))
        .where(
            _among(_O.user_id, _D.goods_id, pairs),
            _O.status.in_([PENDING, AWAITING_PAYMENT]),
            _O.pay_within.is_not(None),
        )
        .group_by(_O.user_id, _D.goods_id)
    )
    found = _by_pair(pairs, conn.execute(reserved).all())
    for pair, units in _by_pair(pairs, conn.execute(holds).all()).items():
        found[pair] += units
    return found


def _by_pair(pairs: list[Pair], rows: Iterable[Any]) -> dict[Pair, int]:
    found = dict.fromkeys(pairs, 0)
    for user_id, goods_id, units in rows:
        found[(user_id, goods_id)] = int(units or 0)
    return found


def counted(refusals: Mapping[str, LimitRefusal]) -> None:
    """The refusals committed, counted by reason (the metric)."""
    for refusal in refusals.values():
        LIMIT_REFUSALS.labels(refusal.reason).inc()


def _int(value: object) -> int | None:
    return None if value is None else int(value)  # type: ignore[call-overload]
