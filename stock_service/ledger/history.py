"""Reading a goods id's ledger: its entries newest first, in keyset pages (the stock flow, the
returns and the adjustments, numbered together by `seq`), and its level at a point in time.
Written by stock_service/deduction/decide.py, in the commits that move the level."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, Table, bindparam, case, delete, func, insert, literal, select, update

from shared.database.engines import transaction
from stock_service.core import DEFAULT, parts_of
from stock_service.storage import (
    backorder,
    backorder_fill,
    backorder_location_limit,
    stock,
    stock_adjustment,
    stock_allocation,
    stock_flow,
    stock_return,
    stock_transfer_leg,
)

DB = "stock database"


@dataclass(frozen=True)
class LedgerEntry:
    seq: int
    kind: str  # deducted, returned, adjusted
    delta: int
    level_after: int
    time: datetime
    flag: str | None = None
    reason: str | None = None
    reference: str | None = None
    location: str | None = None  # where it moved units (a split deduction: `allocations`)
    allocations: tuple[tuple[str, int], ...] = ()
    transfer_id: str | None = None

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "seq": self.seq,
            "kind": self.kind,
            "delta": self.delta,
            "levelAfter": self.level_after,
            "time": self.time.isoformat(),
        }
        for key, value in (("flag", self.flag), ("reason", self.reason)):
            if value is not None:
                body[key] = value
        if self.reference is not None:
            body["reference"] = self.reference
        if self.allocations:
            body["allocations"] = [{"location": loc, "num": n} for loc, n in self.allocations]
        else:
            body["location"] = self.location or DEFAULT
        if self.transfer_id is not None:
            body["transferId"] = self.transfer_id
        return body


def _entries(table: Table, kind: str) -> Any:
    c = table.c
    nothing: Any = literal(None)
    delta: Any
    where: Any = nothing
    label: Any = literal(kind)
    if table is stock_adjustment:
        delta, flag, reason, reference = c.delta, nothing, c.reason, c.reference
        where = c.location
    elif table is backorder:
        delta, flag, reason, reference = literal(0), c.flag, nothing, nothing
    elif table is backorder_fill:
        delta, flag, reason, reference = -c.num, c.flag, nothing, nothing
        where = c.location
    elif table is stock_transfer_leg:
        delta, flag, reason, reference = c.delta, nothing, nothing, c.transfer_id
        where = c.location_id
        label = case((c.leg == "out", "transfer_out"), else_="transfer_in")
    else:
        sign = -1 if kind == "deducted" else 1
        delta, flag, reason, reference = c.num * sign, c.flag, nothing, nothing
    seq = c.position if table is backorder else c.seq
    return select(
        seq.label("seq"),
        label.label("kind"),
        where.label("location"),
        delta.label("delta"),
        c.level_after,
        c.created_at,
        flag.label("flag"),
        reason.label("reason"),
        reference.label("reference"),
    ).where(c.goods_id == bindparam("g"), seq.is_not(None))


SOURCES = (
    (stock_flow, "deducted"),
    (stock_return, "returned"),
    (stock_adjustment, "adjusted"),
    (stock_transfer_leg, "transfer"),
    (backorder, "backordered"),
    (backorder_fill, "backorder_filled"),
)
# Where a page's deductions and returns took their units from (none: the default location).
PARTS = select(stock_allocation).where(
    stock_allocation.c.goods_id == bindparam("g"),
    stock_allocation.c.flag.in_(bindparam("flags", expanding=True)),
)


# Newest first, before a seq (keyset paging), and the newest at or before a point in time.
def _seq(table: Table) -> Any:
    """A table's ledger seq: a backordered line's is its place in line."""
    return table.c.position if table is backorder else table.c.seq


PAGES = [
    _entries(t, k)
    .where(_seq(t) < bindparam("before"))
    .order_by(_seq(t).desc())
    .limit(bindparam("limit"))
    for t, k in SOURCES
]
AT = [
    _entries(t, k).where(t.c.created_at <= bindparam("at")).order_by(_seq(t).desc()).limit(1)
    for t, k in SOURCES
]
SET_LIMIT = (
    update(stock).where(stock.c.goods_id == bindparam("g")).values(backorder_limit=bindparam("n"))
)
CLEAR_LOCATION_LIMITS = delete(backorder_location_limit).where(
    backorder_location_limit.c.goods_id == bindparam("g")
)
ADD_LOCATION_LIMITS = insert(backorder_location_limit)
READ_POLICY = select(stock.c.backorder_limit, stock.c.owed).where(
    stock.c.goods_id == bindparam("g")
)
READ_LOCATION_LIMITS = select(
    backorder_location_limit.c.location_id, backorder_location_limit.c.backorder_limit
).where(backorder_location_limit.c.goods_id == bindparam("g"))
READ_OWED_AT = (
    select(backorder.c.location, func.sum(backorder.c.wanted - backorder.c.filled))
    .where(
        backorder.c.goods_id == bindparam("g"),
        backorder.c.state == "waiting",
        backorder.c.location.is_not(None),
    )
    .group_by(backorder.c.location)
)
SET_THRESHOLD = (
    update(stock).where(stock.c.goods_id == bindparam("g")).values(low_stock=bindparam("t"))
)


class Ledger:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def page(self, goods_id: str, limit: int, before: int | None) -> list[LedgerEntry]:
        """The `limit` newest entries with a seq below `before` (all, when None)."""
        params = {"g": goods_id, "limit": limit, "before": before or 2**62}
        with transaction(self.engine, DB, read_only=True) as conn:
            rows = [r for query in PAGES for r in conn.execute(query, params)]
            rows.sort(key=lambda r: r.seq, reverse=True)
            rows = rows[:limit]
            flags = sorted({r.flag for r in rows if r.flag is not None})
            parts: dict[str, list[tuple[str, int]]] = {}
            for part in conn.execute(PARTS, {"g": goods_id, "flags": flags}) if flags else []:
                parts.setdefault(part.flag, []).append((part.location_id, int(part.num)))
        return [_entry(r, parts.get(r.flag, [])) for r in rows]

    def level_at(self, goods_id: str, at: datetime) -> tuple[int, LedgerEntry | None]:
        """The level at `at`: the one the newest entry by then left (0 before the first)."""
        with transaction(self.engine, DB, read_only=True) as conn:
            rows = [r for query in AT for r in conn.execute(query, {"g": goods_id, "at": at})]
        if not rows:
            return 0, None
        newest = _entry(max(rows, key=lambda r: r.seq))
        return newest.level_after, newest

    def set_backorder_limit(self, goods_id: str, limit: int) -> bool:
        """The units the goods id may owe at once; False if the goods is unknown. Needs no
        lock: a hold reads it once, so a batch decides against one limit (lowered below what
        is owed, no line starts waiting until the owed units fall under it)."""
        with transaction(self.engine, DB) as conn:
            return bool(conn.execute(SET_LIMIT, {"g": goods_id, "n": limit}).rowcount)

    def set_policy(self, goods_id: str, limit: int, locations: dict[str, int]) -> bool:
        """The goods id's backorder limit and its locations' (each replacing what was: a
        location not given has none but the goods id's), in one transaction; False if the goods
        is unknown (nothing written). Needs no lock, as the limit alone."""
        with transaction(self.engine, DB) as conn:
            if not conn.execute(SET_LIMIT, {"g": goods_id, "n": limit}).rowcount:
                return False
            conn.execute(CLEAR_LOCATION_LIMITS, {"g": goods_id})
            rows = [
                {"goods_id": goods_id, "location_id": loc, "backorder_limit": n}
                for loc, n in sorted(locations.items())
            ]
            if rows:
                conn.execute(ADD_LOCATION_LIMITS, rows)
        return True

    def policy(self, goods_id: str) -> dict[str, Any] | None:
        """The goods id's backorder limit and units owed, its locations' limits and the units
        its lines naming a location still wait for there; None if the goods is unknown."""
        with transaction(self.engine, DB, read_only=True) as conn:
            row = conn.execute(READ_POLICY, {"g": goods_id}).first()
            if row is None:
                return None
            limits = {r[0]: int(r[1]) for r in conn.execute(READ_LOCATION_LIMITS, {"g": goods_id})}
            owed_at = {r[0]: int(r[1]) for r in conn.execute(READ_OWED_AT, {"g": goods_id})}
        return {
            "goodsId": goods_id,
            "backorderLimit": int(row.backorder_limit),
            "owed": int(row.owed),
            "locations": dict(sorted(limits.items())),
            "owedAt": dict(sorted(owed_at.items())),
        }

    def set_threshold(self, goods_id: str, threshold: int | None) -> bool:
        """The goods id's low-stock threshold (None: none); False if the goods is unknown."""
        with transaction(self.engine, DB) as conn:
            return bool(conn.execute(SET_THRESHOLD, {"g": goods_id, "t": threshold}).rowcount)


def _entry(row: Any, parts: list[tuple[str, int]] | None = None) -> LedgerEntry:
    """One entry; `parts`: where a deduction's (or its return's) units were, by location."""
    transfer = row.kind.startswith("transfer")
    location = row.location
    split: tuple[tuple[str, int], ...] = ()
    if row.kind == "backorder_filled":  # its units_text: where each unit came from
        parts = parts_of(location)
        location = None
    elif row.kind == "backordered":  # owes units: takes none from anywhere
        parts = []
    if parts and len(parts) == 1:
        location = parts[0][0]
    elif parts:
        split = tuple(sorted(parts))
    return LedgerEntry(
        int(row.seq),
        row.kind,
        int(row.delta),
        int(row.level_after),
        row.created_at,
        row.flag,
        row.reason,
        None if transfer else row.reference,
        location,
        split,
        row.reference if transfer else None,
    )
