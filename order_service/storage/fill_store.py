"""The order database's rows of what was filled and where from: each line's units filled
(order_details.filled) and a confirmed order's allocations (order_allocation), written in the
transaction that confirms the order; and the reads of an order's lines with them. The
statements are built once, as in storage/statements.py (core/fills.py has the rules)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam, insert, select, update

from order_service.core.fills import Fill, Filled
from order_service.storage.tables import order_allocation, order_details

_D = order_details.c
RECORD_FILLED = (
    update(order_details)
    .where(_D.order_id == bindparam("o"), _D.goods_id == bindparam("g"))
    .values(filled=bindparam("f"))
)
INSERT_ALLOCATION = insert(order_allocation)
_A = order_allocation.c
ALLOCATIONS = (
    select(_A.goods_id, _A.location_id, _A.num)
    .where(_A.order_id == bindparam("o"))
    .order_by(_A.goods_id, _A.location_id)
)
LINES = select(_D.order_id, _D.goods_id, _D.goods_num, _D.location, _D.filled).where(
    _D.order_id.in_(bindparam("ids", expanding=True))
)


@dataclass(frozen=True)
class Confirmed:
    """A confirmed order's fill to record: its lines' units filled (for an order that asked
    for a fill or a location), and the allocations the stock service answered."""

    order_id: str
    filled: Filled
    lines: bool  # record each line's filled (not for a plain order: filled whole)


def record(conn: Any, confirmed: Sequence[Confirmed]) -> None:
    """In the confirming transaction: two statements at most for all of them."""
    filled = [
        {"o": c.order_id, "g": g, "f": n}
        for c in confirmed
        if c.lines
        for g, n in sorted(c.filled.lines.items())
    ]
    if filled:
        conn.execute(RECORD_FILLED, filled)
    allocations = [
        {"order_id": c.order_id, "goods_id": g, "location_id": loc, "num": n}
        for c in confirmed
        for g, loc, n in c.filled.allocations
    ]
    if allocations:
        conn.execute(INSERT_ALLOCATION, allocations)


@dataclass
class Lines:
    """An order's lines as the order database has them."""

    units: dict[str, int] = field(default_factory=dict)
    locations: dict[str, str] = field(default_factory=dict)
    filled: dict[str, int | None] = field(default_factory=dict)

    def fill(self, mode: str | None) -> Fill:
        return Fill.of(mode, self.locations)


def lines_of(conn: Any, order_ids: Sequence[str]) -> dict[str, Lines]:
    """The lines of each order, in one query (none for an id with no lines)."""
    found: dict[str, Lines] = {order_id: Lines() for order_id in order_ids}
    if order_ids:
        for d in conn.execute(LINES, {"ids": list(order_ids)}):
            lines = found[d.order_id]
            lines.units[d.goods_id] = d.goods_num
            lines.filled[d.goods_id] = d.filled
            if d.location is not None:
                lines.locations[d.goods_id] = d.location
    return found


def allocations_of(conn: Any, order_id: str) -> tuple[tuple[str, str, int], ...]:
    return tuple(
        (a.goods_id, a.location_id, a.num) for a in conn.execute(ALLOCATIONS, {"o": order_id})
    )


def detail_rows(order_id: str, lines: Mapping[str, int], fill: Fill) -> list[dict[str, Any]]:
    """An order's order_details rows but their ids (every row with a `location` key, so the
    rows of a batch insert in one statement whatever each order named)."""
    return [
        {"order_id": order_id, "goods_id": g, "goods_num": n, "location": fill.locations.get(g)}
        for g, n in sorted(lines.items())
    ]
