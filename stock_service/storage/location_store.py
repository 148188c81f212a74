"""The stock database's rows of locations (docs/locations.md): read with a batch's levels under
its hold, and written in its commit (stock_service/deduction/decide.py), plus the admin's
location rows.

Every statement is built once, as in store.py. The named levels are written as planned, in the
commit whose fenced write of the goods id's row (deduction/decide.py) orders them: a holder that
loses that compare-and-set rolls them back with it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    BigInteger,
    String,
    bindparam,
    case,
    cast,
    func,
    insert,
    literal,
    select,
    union_all,
    update,
)
from sqlalchemy.engine import Connection

from stock_service.core import DEFAULT, Place, Transfer
from stock_service.storage.tables import (
    location,
    stock,
    stock_allocation,
    stock_location,
    stock_transfer,
    stock_transfer_leg,
)

# What a hold reads of its goods ids, in one round trip: each one's row (levels, seed, fence,
# ledger seq, threshold) with its named locations' levels (a row per named location, or one
# with none), and every location row (with an empty goods id: a goods id is never empty). A
# second statement for the locations cost a fifth of a millisecond of wall time per hold, under
# the lock, on PostgreSQL.
_LEVELS = (
    stock.c.goods_id,
    stock.c.num,
    stock.c.seed_version,
    stock.c.fence,
    stock.c.ledger_seq,
    stock.c.low_stock,
    stock.c.backorder_limit,
    stock.c.owed,
)
_NO_STOCK: tuple[Any, ...] = (
    literal("", String).label("goods_id"),
    *(literal(0, BigInteger).label(name) for name in ("num", "seed_version", "fence")),
    literal(0, BigInteger).label("ledger_seq"),
    literal(None, BigInteger).label("low_stock"),
    literal(0, BigInteger).label("backorder_limit"),
    literal(0, BigInteger).label("owed"),
)
READ_LEVELS_AND_PLACES: Any = union_all(
    select(
        *_LEVELS,
        stock_location.c.location_id.label("location_id"),
        stock_location.c.num.label("at_num"),
        stock_location.c.held.label("at_held"),
    )
    .select_from(stock.outerjoin(stock_location, stock_location.c.goods_id == stock.c.goods_id))
    .where(stock.c.goods_id.in_(bindparam("goods_ids", expanding=True))),
    select(
        *_NO_STOCK,
        location.c.location_id.label("location_id"),
        cast(location.c.priority, BigInteger).label("at_num"),
        cast(case((location.c.active, 1), else_=0), BigInteger).label("at_held"),
    ),
)
READ_TRANSFERS = select(stock_transfer).where(
    stock_transfer.c.transfer_id.in_(bindparam("ids", expanding=True))
)
INSERT_NAMED = insert(stock_location)
WRITE_NAMED = (
    update(stock_location)
    .where(
        stock_location.c.goods_id == bindparam("g"),
        stock_location.c.location_id == bindparam("loc"),
    )
    .values(num=bindparam("num"), held=stock_location.c.held + bindparam("held"))
)
# A hold paid: its units at each named location it came from are no longer held.
UNHOLD_NAMED = (
    update(stock_location)
    .where(
        stock_location.c.goods_id == bindparam("g"),
        stock_location.c.location_id == bindparam("loc"),
    )
    .values(held=stock_location.c.held - bindparam("n"))
)
READ_ALLOCATIONS = select(stock_allocation).where(stock_allocation.c.flag == bindparam("flag"))
INSERT_ALLOCATIONS = insert(stock_allocation)
INSERT_TRANSFER = insert(stock_transfer)
INSERT_LEGS = insert(stock_transfer_leg)
# A transfer moved on from the state its step read: a compare-and-set, so one step wins.
MOVE_TRANSFER = (
    update(stock_transfer)
    .where(
        stock_transfer.c.transfer_id == bindparam("t"),
        stock_transfer.c.state == bindparam("was"),
    )
    .values(state=bindparam("now"), updated_at=bindparam("at"))
)


class Places:
    """What a hold reads of locations: the named levels and held units of its goods ids, and
    the locations that have a row."""

    def __init__(self) -> None:
        self.named: dict[str, dict[str, int]] = {}
        self.named_held: dict[str, dict[str, int]] = {}
        self.places: dict[str, Place] = {}


def read_levels(conn: Connection, goods_ids: Sequence[str]) -> tuple[dict[str, Any], Places]:
    """Each goods id's stock row (by goods id), and the locations (READ_LEVELS_AND_PLACES)."""
    rows: dict[str, Any] = {}
    places = Places()
    for row in conn.execute(READ_LEVELS_AND_PLACES, {"goods_ids": list(goods_ids)}):
        if row.goods_id == "":
            places.places[row.location_id] = Place(
                row.location_id, int(row.at_num), bool(row.at_held)
            )
            continue
        rows.setdefault(row.goods_id, row)
        if row.location_id is not None:
            places.named.setdefault(row.goods_id, {})[row.location_id] = int(row.at_num)
            places.named_held.setdefault(row.goods_id, {})[row.location_id] = int(row.at_held)
    return rows, places


def read_transfers(conn: Connection, ids: Sequence[str]) -> dict[str, Transfer]:
    if not ids:
        return {}
    return {r.transfer_id: as_transfer(r) for r in conn.execute(READ_TRANSFERS, {"ids": list(ids)})}


def as_transfer(row: Any) -> Transfer:
    return Transfer(
        row.transfer_id,
        row.goods_id,
        row.from_location,
        row.to_location,
        int(row.units),
        row.state,
        row.reference,
    )


def allocations(conn: Connection, flag: str) -> dict[str, dict[str, int]]:
    """Where each of a flag's deducted goods ids came from (none: all from the default)."""
    found: dict[str, dict[str, int]] = {}
    for row in conn.execute(READ_ALLOCATIONS, {"flag": flag}):
        found.setdefault(row.goods_id, {})[row.location_id] = int(row.num)
    return found


def write_named(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """The named levels a plan moved: updated, or inserted where no row was read (a second
    writer of a new row fails on the key, and the batch reads again)."""
    for row in rows:
        if row["new"]:
            values = {k: row[k] for k in ("goods_id", "location_id", "num", "held")}
            conn.execute(INSERT_NAMED, values)
            continue
        params = {"g": row["goods_id"], "loc": row["location_id"], "num": row["num"]}
        conn.execute(WRITE_NAMED, {**params, "held": row["held"]})


def write_moves(
    conn: Connection,
    allocations_: Sequence[dict[str, Any]],
    legs: Sequence[dict[str, Any]],
    new: Sequence[Transfer],
    moved: Sequence[tuple[str, str, str]],
    stamp: object,
) -> bool:
    """A batch's allocations, transfers and legs; False when a transfer was moved on by
    another writer since it was read (nothing of it is written then: the caller rolls back)."""
    for transfer_id, was, now in moved:
        params = {"t": transfer_id, "was": was, "now": now, "at": stamp}
        if conn.execute(MOVE_TRANSFER, params).rowcount != 1:
            return False
    if allocations_:
        conn.execute(INSERT_ALLOCATIONS, list(allocations_))
    if new:
        conn.execute(
            INSERT_TRANSFER,
            [
                {
                    "transfer_id": t.transfer_id,
                    "reference": t.reference,
                    "goods_id": t.goods_id,
                    "from_location": t.source,
                    "to_location": t.target,
                    "units": t.units,
                    "state": t.state,
                    "created_at": stamp,
                    "updated_at": stamp,
                }
                for t in new
            ],
        )
    if legs:
        conn.execute(INSERT_LEGS, [{**leg, "created_at": stamp} for leg in legs])
    return True


# The goods ids that owe units and have some at a location: what its activation may hand to
# their waiting lines (the lines are served under each goods id's lock, in its hold).
OWING_AT = (
    select(stock.c.goods_id)
    .join(stock_location, stock_location.c.goods_id == stock.c.goods_id)
    .where(
        stock_location.c.location_id == bindparam("loc"),
        stock_location.c.num > 0,
        stock.c.owed > 0,
    )
    .order_by(stock.c.goods_id)
)


# The default location has no rows: its level is the total less the named locations'.
_NAMED_TOTAL = (
    select(func.coalesce(func.sum(stock_location.c.num), 0))
    .where(stock_location.c.goods_id == stock.c.goods_id)
    .scalar_subquery()
)
OWING_AT_DEFAULT = (
    select(stock.c.goods_id)
    .where(stock.c.owed > 0, stock.c.num - _NAMED_TOTAL > 0)
    .order_by(stock.c.goods_id)
)


def owing_at(conn: Connection, location_id: str) -> list[str]:
    if location_id == DEFAULT:
        return [r.goods_id for r in conn.execute(OWING_AT_DEFAULT)]
    return [r.goods_id for r in conn.execute(OWING_AT, {"loc": location_id})]
