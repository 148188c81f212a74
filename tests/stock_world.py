"""What the stock database holds for some goods ids, read in one transaction: the rows the
stateful test's invariants (tests/stock_invariants.py) are judged on. Nothing here judges."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from stock_service.core.places import DEFAULT
from stock_service.storage.tables import (
    backorder,
    backorder_fill,
    flag_decision,
    location,
    stock,
    stock_adjustment,
    stock_flow,
    stock_location,
    stock_return,
    stock_transfer,
    stock_transfer_leg,
)


@dataclass
class World:
    stock: dict[str, Any]  # goods id -> its stock row
    named: dict[str, dict[str, Any]]  # goods id -> location -> its stock_location row
    active: dict[str, bool]  # location -> active (default: active unless its row says not)
    flows: list[Any]
    returns: list[Any]
    adjustments: list[Any]
    transfers: list[Any]
    legs: list[Any]
    lines: list[Any]  # backorder rows
    fills: list[Any]
    decisions: dict[str, Any] = field(default_factory=dict)  # flag -> flag_decision row

    def of(self, rows: Iterable[Any], goods_id: str) -> list[Any]:
        return [r for r in rows if r.goods_id == goods_id]

    def total(self, rows: Iterable[Any], goods_id: str, column: str = "num") -> int:
        return sum(int(getattr(r, column)) for r in self.of(rows, goods_id))

    def shelves(self, goods_id: str) -> dict[str, int]:
        """Each location's level of the goods id; the default's is the rest of the total."""
        named = {loc: int(r.num) for loc, r in self.named.get(goods_id, {}).items()}
        row = self.stock.get(goods_id)
        rest = int(row.num) - sum(named.values()) if row is not None else 0
        return {DEFAULT: rest, **named}

    def is_active(self, location_id: str) -> bool:
        return self.active.get(location_id, location_id == DEFAULT)

    def handed(self, flag: str, goods_id: str) -> int:
        """The units a flag's deduction took of a goods id: its flow and its lines' fills."""
        took = [r for r in self.flows + self.fills if r.flag == flag and r.goods_id == goods_id]
        return sum(int(r.num) for r in took)

    def by_flag(self, rows: Iterable[Any]) -> dict[tuple[str, str], int]:
        summed: dict[tuple[str, str], int] = defaultdict(int)
        for r in rows:
            summed[(r.flag, r.goods_id)] += int(r.num)
        return summed


def read_world(engine: sa.Engine, goods_ids: list[str], flags: Iterable[str] = ()) -> World:
    def rows(table: sa.Table) -> list[Any]:
        return list(conn.execute(sa.select(table).where(table.c.goods_id.in_(goods_ids))))

    with engine.connect() as conn:
        levels = {r.goods_id: r for r in rows(stock)}
        named: dict[str, dict[str, Any]] = defaultdict(dict)
        for r in rows(stock_location):
            named[r.goods_id][r.location_id] = r
        active = {r.location_id: bool(r.active) for r in conn.execute(sa.select(location))}
        world = World(
            levels,
            dict(named),
            active,
            rows(stock_flow),
            rows(stock_return),
            rows(stock_adjustment),
            rows(stock_transfer),
            rows(stock_transfer_leg),
            rows(backorder),
            rows(backorder_fill),
        )
        named_flags = {r.flag for r in world.flows + world.returns + world.lines + world.fills}
        wanted = sorted(named_flags | set(flags))
        for start in range(0, len(wanted), 500):
            page = wanted[start : start + 500]
            query = sa.select(flag_decision).where(flag_decision.c.flag.in_(page))
            world.decisions.update({r.flag: r for r in conn.execute(query)})
    return world
