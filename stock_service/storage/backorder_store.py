"""The stock database's backorder rows (docs/backorders.md): the lines waiting for units, read
under a hold when one of its goods ids owes units, and written in its commit (deduction/decide.py):
the lines that start waiting, each hand-over of units (a ledger line), the lines filled or
given up, and each goods id's units owed (moved relatively, as the held units are)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import bindparam, case, insert, select, update
from sqlalchemy.engine import Connection

from stock_service.core import Backorders, Waiting
from stock_service.storage.tables import (
    backorder,
    backorder_fill,
    backorder_location_limit,
    stock,
)

READ_WAITING = (
    select(backorder.c.flag, backorder.c.goods_id, backorder.c.position, backorder.c.wanted)
    .add_columns(backorder.c.filled, backorder.c.location)
    .where(
        backorder.c.goods_id.in_(bindparam("goods_ids", expanding=True)),
        backorder.c.state == "waiting",
    )
    .order_by(backorder.c.goods_id, backorder.c.position)
)
INSERT_WAITING = insert(backorder)
INSERT_FILLS = insert(backorder_fill)
_AFTER = backorder.c.filled + bindparam("n")
# A waiting line got units: filled when it has all it wanted (a compare-and-set on `waiting`,
# so a line a stale writer moved meanwhile makes the batch read again). The state is set
# before `filled`: MySQL evaluates SET left to right, each on the values already set.
FILL_LINE = (
    update(backorder)
    .where(
        backorder.c.flag == bindparam("f"),
        backorder.c.goods_id == bindparam("g"),
        backorder.c.state == "waiting",
    )
    .ordered_values(
        (backorder.c.state, case((backorder.c.wanted <= _AFTER, "filled"), else_="waiting")),
        (backorder.c.filled, _AFTER),
        (backorder.c.updated_at, bindparam("at")),
    )
)
GIVE_UP = (
    update(backorder)
    .where(
        backorder.c.flag == bindparam("f"),
        backorder.c.goods_id == bindparam("g"),
        backorder.c.state == "waiting",
    )
    .values(state="cancelled", gave_up_after=bindparam("after"), updated_at=bindparam("at"))
)
MOVE_OWED = (
    update(stock)
    .where(stock.c.goods_id == bindparam("g"))
    .values(owed=stock.c.owed + bindparam("d"))
)
READ_LOCATION_LIMITS = select(backorder_location_limit).where(
    backorder_location_limit.c.goods_id.in_(bindparam("goods_ids", expanding=True))
)
READ_LINES = select(backorder).where(backorder.c.flag == bindparam("flag"))
READ_FILLS = select(backorder_fill).where(backorder_fill.c.flag == bindparam("flag"))


def read_waiting(conn: Connection, owing: Sequence[str]) -> dict[str, list[Waiting]]:
    """The waiting lines of these goods ids (those that owe units), oldest first."""
    if not owing:
        return {}
    found: dict[str, list[Waiting]] = {}
    for r in conn.execute(READ_WAITING, {"goods_ids": list(owing)}):
        left = int(r.wanted) - int(r.filled)
        line = Waiting(r.flag, r.goods_id, int(r.position), left, r.location)
        found.setdefault(r.goods_id, []).append(line)
    return found


def read_location_limits(conn: Connection, goods_ids: Sequence[str]) -> dict[str, dict[str, int]]:
    """The backorder limits of these goods ids' locations (goods id -> location -> limit): read
    by a hold only for the goods ids a line with fill=backorder names a location of."""
    if not goods_ids:
        return {}
    found: dict[str, dict[str, int]] = {}
    for r in conn.execute(READ_LOCATION_LIMITS, {"goods_ids": list(goods_ids)}):
        found.setdefault(r.goods_id, {})[r.location_id] = int(r.backorder_limit)
    return found


def write_backorders(
    conn: Connection,
    waiting: Sequence[dict[str, Any]],
    fills: Sequence[dict[str, Any]],
    filled: Mapping[tuple[str, str], int],
    backorders: Backorders | None,
    owed_before: Mapping[str, int],
    stamp: object,
) -> bool:
    """A batch's backorder rows; False when a line moved since it was read (the caller rolls
    back and reads again)."""
    if backorders is None:
        return True
    if waiting:
        conn.execute(
            INSERT_WAITING, [{**w, "created_at": stamp, "updated_at": stamp} for w in waiting]
        )
    for (flag, goods_id), units in sorted(filled.items()):
        params = {"f": flag, "g": goods_id, "n": units, "at": stamp}
        if conn.execute(FILL_LINE, params).rowcount != 1:
            return False
    for flag, goods_id in sorted(backorders.cancelled):
        after = backorders.gave_up_after.get((flag, goods_id))
        params = {"f": flag, "g": goods_id, "after": after, "at": stamp}
        if conn.execute(GIVE_UP, params).rowcount != 1:
            return False
    if fills:
        conn.execute(INSERT_FILLS, [{**f, "created_at": stamp} for f in fills])
    for goods_id, owed in sorted(backorders.owed.items()):
        moved = owed - owed_before.get(goods_id, 0)
        if moved:
            conn.execute(MOVE_OWED, {"g": goods_id, "d": moved})
    return True


def flag_backorders(conn: Connection, flag: str) -> tuple[list[Any], list[Any]]:
    """A flag's lines (waiting, filled or given up) and the units handed to them."""
    return list(conn.execute(READ_LINES, {"flag": flag})), list(
        conn.execute(READ_FILLS, {"flag": flag})
    )
