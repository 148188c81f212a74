"""Each goods id's ledger, line by line in seq order, with where each line moved its units:
the location checks replay it to know every location's level just before any line
(allocation_rule.py's L5) and the least a location held since the goods id's seed (I4, a line
that named its location: lost_sale.py).

Where a line moved units:
- an adjustment: at its `location` (none: the default location);
- a deduction (a flow row): its stock_allocation rows; none: all from the default location;
- a return: back to where its flag's deduction took the units (the same allocation rows);
- a transfer leg: at its `location_id`;
- a hand-over to a backordered line (backorder_fill, FILLED): from the locations its
  `location` text names ("loc:n,loc:n"), like a deduction;
- a line starting to wait (backorder, BACKORDERED): nothing moved, its seq is its `position`;
- a return of a backordered flag gives back what it took and what it was handed, each to
  where it came from.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass

from sqlalchemy import ColumnElement, Table, select
from sqlalchemy.engine import Connection

from stock_service.core.places import DEFAULT, parts_of
from stock_service.storage.tables import (
    backorder,
    backorder_fill,
    location,
    stock_adjustment,
    stock_allocation,
    stock_flow,
    stock_return,
    stock_transfer_leg,
)

SET, DEDUCTED, RETURNED, ADJUSTED, LEG = "set", "deducted", "returned", "adjusted", "leg"
FILLED, BACKORDERED = "backorder_filled", "backordered"


@dataclass(frozen=True)
class Line:
    """One ledger line of a goods id: its seq, its kind (SET: a level set outright, a seed;
    ADJUSTED: any other adjustment; DEDUCTED, RETURNED; LEG: a transfer's leg), the flag of a
    deduction or a return, and (location, delta) of each place it moved units."""

    seq: int
    kind: str
    parts: tuple[tuple[str, int], ...]
    flag: str | None = None

    @property
    def units(self) -> int:
        return abs(sum(delta for _, delta in self.parts))


Ledger = Mapping[str, list[Line]]  # goods id -> its lines, in seq order


def read_ledger(
    conn: Connection, like: str | None = None, goods_ids: Collection[str] | None = None
) -> dict[str, list[Line]]:
    """The lines of the goods ids whose id is `like` a pattern, or of `goods_ids`. A flow or
    a return without a seq (written before the ledger) has no place in it and is left out."""

    def scope(t: Table) -> ColumnElement[bool]:
        if goods_ids is not None:
            return t.c.goods_id.in_(sorted(goods_ids))
        return t.c.goods_id.like(like or "%")

    taken: dict[tuple[str, str], list[tuple[str, int]]] = defaultdict(list)
    al = stock_allocation.c
    for a in conn.execute(
        select(al.flag, al.goods_id, al.location_id, al.num).where(scope(stock_allocation))
    ):
        taken[(a.flag, a.goods_id)].append((a.location_id, int(a.num)))
    lines: dict[str, list[Line]] = defaultdict(list)
    adj = stock_adjustment.c
    query = select(adj.goods_id, adj.seq, adj.delta, adj.location, adj.reason)
    for r in conn.execute(query.where(scope(stock_adjustment))):
        kind = SET if r.reason == "set" else ADJUSTED
        lines[r.goods_id].append(Line(int(r.seq), kind, ((r.location or DEFAULT, int(r.delta)),)))
    handed: dict[tuple[str, str], list[tuple[str, int]]] = defaultdict(list)
    bf = backorder_fill.c
    for f in conn.execute(
        select(bf.flag, bf.goods_id, bf.seq, bf.location).where(scope(backorder_fill))
    ):
        came = parts_of(f.location)
        handed[(f.flag, f.goods_id)] += came
        parts = tuple(sorted((loc, -n) for loc, n in came))
        lines[f.goods_id].append(Line(int(f.seq), FILLED, parts, f.flag))
    bo = backorder.c
    for w in conn.execute(select(bo.flag, bo.goods_id, bo.position).where(scope(backorder))):
        lines[w.goods_id].append(Line(int(w.position), BACKORDERED, (), w.flag))
    for table, kind, sign in ((stock_flow, DEDUCTED, -1), (stock_return, RETURNED, 1)):
        c = table.c
        moves = select(c.flag, c.goods_id, c.seq, c.num).where(scope(table), c.seq.is_not(None))
        for m in conn.execute(moves):
            key = (m.flag, m.goods_id)
            extra = handed.get(key, []) if kind == RETURNED else []
            own = int(m.num) - sum(n for _, n in extra)
            came = [*(taken.get(key) or ([(DEFAULT, own)] if own else [])), *extra]
            parts = tuple(sorted(_merged(came, sign).items()))
            lines[m.goods_id].append(Line(int(m.seq), kind, parts, m.flag))
    lg = stock_transfer_leg.c
    for leg in conn.execute(
        select(lg.goods_id, lg.seq, lg.location_id, lg.delta).where(scope(stock_transfer_leg))
    ):
        lines[leg.goods_id].append(Line(int(leg.seq), LEG, ((leg.location_id, int(leg.delta)),)))
    return {g: sorted(found, key=lambda line: line.seq) for g, found in lines.items()}


def _merged(came: list[tuple[str, int]], sign: int) -> dict[str, int]:
    merged: dict[str, int] = defaultdict(int)
    for loc, n in came:
        merged[loc] += sign * n
    return dict(merged)


def replay(lines: list[Line]) -> Iterator[tuple[Line, dict[str, int]]]:
    """Each line with every location's level just before it (a location not yet named: 0)."""
    levels: dict[str, int] = defaultdict(int)
    for line in lines:
        yield line, dict(levels)
        for where, delta in line.parts:
            levels[where] += delta


def final_levels(lines: list[Line]) -> dict[str, int]:
    levels: dict[str, int] = defaultdict(int)
    for line in lines:
        for where, delta in line.parts:
            levels[where] += delta
    return dict(levels)


def lowest_since_seed(lines: list[Line], where: str) -> int | None:
    """The least `where` held from the goods id's last seed (a level set outright, at any of
    its locations) to the end: a refusal against the current seed came after that seed, so
    the location's level at the refusal was at least this. None: the goods id has no lines."""
    if not lines:
        return None
    lowest: int | None = None
    level = 0
    for line in lines:
        level += sum(delta for loc, delta in line.parts if loc == where)
        if line.kind == SET:
            lowest = None  # a new seed: what came before it is another seed's
        lowest = level if lowest is None else min(lowest, level)
    return lowest


def read_places(conn: Connection) -> dict[str, tuple[int, bool]]:
    """Every location's (priority, active), the default one's even without a row."""
    found = {DEFAULT: (0, True)}
    for r in conn.execute(select(location.c.location_id, location.c.priority, location.c.active)):
        found[r.location_id] = (int(r.priority), bool(r.active))
    return found
