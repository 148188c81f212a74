"""What `inventory check` reads from the two databases, for the goods ids of a prefix: levels,
flows, returns, flag decisions and orders. Plain data, so the invariants can be checked on
hand-made snapshots too."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Engine, Table, func, select, true
from sqlalchemy.engine import Connection

from inventory.check.ledger_replay import lowest_since_seed, read_ledger
from order_service.core.fills import BACKORDER, PARTIAL
from order_service.storage.tables import order_details, orders
from stock_service.storage.tables import (
    backorder_fill,
    flag_decision,
    stock,
    stock_adjustment,
    stock_flow,
    stock_return,
    stock_transfer_leg,
)


@dataclass
class Snapshot:
    """What the checks read: levels, flows, returns and orders of the goods in scope."""

    levels: dict[str, tuple[int, int, int]]  # goods -> (num, seeded_num, seed_version)
    flow_sums: dict[tuple[str, int], int]  # (goods, seed_version) -> sum(num)
    duplicate_flows: list[tuple[str, str, int]]  # (flag, goods, count)
    flows_by_flag: dict[str, dict[str, int]]  # flag -> goods -> num
    orders: dict[str, str]  # order id -> status
    lines: dict[str, dict[str, int]]  # order id -> goods -> num
    reasons: dict[str, str | None] = field(default_factory=dict)  # order id -> reason
    # order id -> goods -> seed version, for the lines refused for lack of stock (None: an
    # order recorded before the seed version was kept)
    refused: dict[str, dict[str, int | None]] = field(default_factory=dict)
    return_sums: dict[tuple[str, int], int] = field(default_factory=dict)  # like flow_sums
    returns_by_flag: dict[str, dict[str, int]] = field(default_factory=dict)
    # flag -> deducted|returned|voided|refused, for the flags that have flows
    decisions: dict[str, str] = field(default_factory=dict)
    # flag -> goods -> (the flow's time, the return's time), for the returned lines
    return_times: dict[str, dict[str, tuple[datetime, datetime]]] = field(default_factory=dict)
    pay_deadlines: dict[str, datetime] = field(default_factory=dict)  # the holds' deadlines
    # goods -> (net units, units added) of the adjustments since its last seed (PUT /stock, an
    # adjustment of reason set): restocks, losses and counts move a level like flows and
    # returns do, and the checks count them
    adjustments: dict[str, tuple[int, int]] = field(default_factory=dict)
    # goods -> (the stock row's held count, the units of the flags still held: deducted by an
    # unpaid hold, neither paid nor returned)
    held: dict[str, tuple[int, int]] = field(default_factory=dict)
    # Stock in several locations (docs/locations.md). goods -> (net units, units in) of the
    # transfers' legs since its last seed: a unit in transit has left the level.
    legs: dict[str, tuple[int, int]] = field(default_factory=dict)
    partial: set[str] = field(default_factory=set)  # the orders placed with fill=partial
    # order id -> goods -> units filled, as recorded when an order that asked for a fill or a
    # location was confirmed (order_details.filled)
    filled: dict[str, dict[str, int]] = field(default_factory=dict)
    line_locations: dict[str, dict[str, str]] = field(default_factory=dict)  # named by a line
    # (goods, location) -> the least the location held since the goods id's seed, for the
    # refused lines that named their location (I4 judges them there)
    location_floors: dict[tuple[str, str], int] = field(default_factory=dict)
    # Backorders: the orders placed with fill=backorder; the units handed to their lines
    # (backorder_fill), per goods id since its last seed, and per flag.
    backorder: set[str] = field(default_factory=set)
    fill_sums: dict[str, int] = field(default_factory=dict)
    fills_by_flag: dict[str, dict[str, int]] = field(default_factory=dict)

    def had(self, flag: str) -> dict[str, int]:
        """What a flag took: its flows, plus what its backordered lines were handed."""
        units = dict(self.flows_by_flag.get(flag, {}))
        for goods, num in self.fills_by_flag.get(flag, {}).items():
            units[goods] = units.get(goods, 0) + num
        return units


def _sums(conn: Connection, t: Table, like: str) -> dict[tuple[str, int], int]:
    """Units per (goods id, seed version) of stock_flow or stock_return (the same columns)."""
    return {
        (r.goods_id, int(r.seed_version)): int(r.total)
        for r in conn.execute(
            select(t.c.goods_id, t.c.seed_version, func.sum(t.c.num).label("total"))
            .where(t.c.goods_id.like(like))
            .group_by(t.c.goods_id, t.c.seed_version)
        )
    }


def _by_flag(conn: Connection, t: Table, like: str) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for r in conn.execute(select(t.c.flag, t.c.goods_id, t.c.num).where(t.c.goods_id.like(like))):
        out[r.flag][r.goods_id] = out[r.flag].get(r.goods_id, 0) + r.num
    return dict(out)


def _adjustments(
    conn: Connection, like: str, t: Table = stock_adjustment
) -> dict[str, tuple[int, int]]:
    """Per goods id, the adjustments after its last seed (the adjustment of reason set that
    starts the current seed version; the ledger numbers a goods id's entries); or, with `t`
    stock_transfer_leg or backorder_fill, the legs or the hand-overs (negative) after it."""
    a = stock_adjustment
    last_seed = (
        select(a.c.goods_id, func.max(a.c.seq).label("seq"))
        .where(a.c.goods_id.like(like), a.c.reason == "set")
        .group_by(a.c.goods_id)
        .subquery()
    )
    delta = -t.c.num if t is backorder_fill else t.c.delta
    rows = conn.execute(
        select(t.c.goods_id, delta.label("delta"))
        .select_from(t.outerjoin(last_seed, last_seed.c.goods_id == t.c.goods_id))
        .where(
            t.c.goods_id.like(like),
            a.c.reason != "set" if t is a else true(),
            (last_seed.c.seq.is_(None)) | (t.c.seq > last_seed.c.seq),
        )
    )
    out: dict[str, tuple[int, int]] = {}
    for r in rows:
        net, added = out.get(r.goods_id, (0, 0))
        out[r.goods_id] = (net + int(r.delta), added + max(int(r.delta), 0))
    return out


def read_snapshot(order_engine: Engine, stock_engine: Engine, goods_prefix: str = "") -> Snapshot:
    like = f"{goods_prefix}%"
    with stock_engine.connect() as conn:
        levels = {
            r.goods_id: (int(r.num), int(r.seeded_num), int(r.seed_version))
            for r in conn.execute(select(stock).where(stock.c.goods_id.like(like)))
        }
        duplicate_flows = [
            (r.flag, r.goods_id, int(r.n))
            for r in conn.execute(
                select(stock_flow.c.flag, stock_flow.c.goods_id, func.count().label("n"))
                .where(stock_flow.c.goods_id.like(like))
                .group_by(stock_flow.c.flag, stock_flow.c.goods_id)
                .having(func.count() > 1)
            )
        ]
        flows_by_flag = _by_flag(conn, stock_flow, like)
        returns_by_flag = _by_flag(conn, stock_return, like)
        flags = select(stock_flow.c.flag).where(stock_flow.c.goods_id.like(like))
        decisions = {
            r.flag: r.outcome
            for r in conn.execute(
                select(flag_decision.c.flag, flag_decision.c.outcome).where(
                    flag_decision.c.flag.in_(flags)
                )
            )
        }
        return_times: dict[str, dict[str, tuple[datetime, datetime]]] = defaultdict(dict)
        for r in conn.execute(
            select(
                stock_return.c.flag,
                stock_return.c.goods_id,
                stock_flow.c.created_at.label("deducted_at"),
                stock_return.c.created_at.label("returned_at"),
            )
            .select_from(
                stock_return.outerjoin(
                    stock_flow,
                    (stock_flow.c.flag == stock_return.c.flag)
                    & (stock_flow.c.goods_id == stock_return.c.goods_id),
                )
            )
            .where(stock_return.c.goods_id.like(like))
        ):
            return_times[r.flag][r.goods_id] = (r.deducted_at, r.returned_at)
        flow_sums, return_sums = _sums(conn, stock_flow, like), _sums(conn, stock_return, like)
        adjustments = _adjustments(conn, like)
        legs = _adjustments(conn, like, stock_transfer_leg)
        fill_sums = {g: -net for g, (net, _) in _adjustments(conn, like, backorder_fill).items()}
        fills_by_flag = _by_flag(conn, backorder_fill, like)
        held = _held(conn, like)
    with order_engine.connect() as conn:
        lines: dict[str, dict[str, int]] = defaultdict(dict)
        refused: dict[str, dict[str, int | None]] = defaultdict(dict)
        filled: dict[str, dict[str, int]] = defaultdict(dict)
        named: dict[str, dict[str, str]] = defaultdict(dict)
        d = order_details.c
        in_scope = select(d.order_id).where(d.goods_id.like(like))
        for det in conn.execute(
            select(
                d.order_id,
                d.goods_id,
                d.goods_num,
                d.available,
                d.seed_version,
                d.location,
                d.filled,
            ).where(d.order_id.in_(in_scope))
        ):
            lines[det.order_id][det.goods_id] = int(det.goods_num)
            if det.available is not None:
                refused[det.order_id][det.goods_id] = det.seed_version
            if det.filled is not None:
                filled[det.order_id][det.goods_id] = int(det.filled)
            if det.location is not None:
                named[det.order_id][det.goods_id] = det.location
        statuses, reasons, deadlines, partial, owing = {}, {}, {}, set(), set()
        o = orders.c
        for row in conn.execute(
            select(o.id, o.status, o.reason, o.pay_deadline, o.fill_mode).where(o.id.in_(in_scope))
        ):
            statuses[row.id] = row.status
            reasons[row.id] = row.reason
            if row.pay_deadline is not None:
                deadlines[row.id] = row.pay_deadline
            if row.fill_mode == PARTIAL:
                partial.add(row.id)
            if row.fill_mode == BACKORDER:
                owing.add(row.id)
    # I4 judges a refused line that named its location against that location's ledger.
    floors = location_floors(
        stock_engine,
        {(g, named[o][g]) for o, short in refused.items() for g in short if g in named.get(o, {})},
    )
    return Snapshot(
        levels,
        flow_sums,
        duplicate_flows,
        flows_by_flag,
        statuses,
        dict(lines),
        reasons,
        dict(refused),
        return_sums,
        returns_by_flag,
        decisions,
        dict(return_times),
        deadlines,
        adjustments,
        held,
        legs,
        partial,
        dict(filled),
        dict(named),
        floors,
        owing,
        fill_sums,
        fills_by_flag,
    )


def location_floors(
    stock_engine: Engine, wanted: set[tuple[str, str]]
) -> dict[tuple[str, str], int]:
    """(goods, location) -> the least the location held since the goods id's seed."""
    if not wanted:
        return {}
    with stock_engine.connect() as conn:
        ledger = read_ledger(conn, goods_ids={g for g, _ in wanted})
    floors = {(g, loc): lowest_since_seed(ledger.get(g, []), loc) for g, loc in wanted}
    return {key: n for key, n in floors.items() if n is not None}


def _held(conn: Connection, like: str) -> dict[str, tuple[int, int]]:
    """Per goods id, the held count the stock row keeps and the one its flags say."""
    counted = {
        r.goods_id: int(r.held)
        for r in conn.execute(
            select(stock.c.goods_id, stock.c.held).where(stock.c.goods_id.like(like))
        )
    }
    still = select(flag_decision.c.flag).where(
        flag_decision.c.held.is_(True), flag_decision.c.outcome == "deducted"
    )
    flagged = {
        r.goods_id: int(r.units)
        for r in conn.execute(
            select(stock_flow.c.goods_id, func.sum(stock_flow.c.num).label("units"))
            .where(stock_flow.c.goods_id.like(like), stock_flow.c.flag.in_(still))
            .group_by(stock_flow.c.goods_id)
        )
    }
    return {g: (n, flagged.get(g, 0)) for g, n in counted.items()}


def read_orders(
    order_engine: Engine, ids: list[str], chunk: int = 500
) -> dict[str, tuple[str, str | None]]:
    """Order id -> (status, reason) for these ids, whatever their lines: the chaos checker's
    way to the orders a history names that have no line of its goods (a cancel by key before
    any order leaves a CANCELLED row with none: a tombstone)."""
    found: dict[str, tuple[str, str | None]] = {}
    with order_engine.connect() as conn:
        for i in range(0, len(ids), chunk):
            for o in conn.execute(
                select(orders.c.id, orders.c.status, orders.c.reason).where(
                    orders.c.id.in_(ids[i : i + chunk])
                )
            ):
                found[o.id] = (o.status, o.reason)
    return found
