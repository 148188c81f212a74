"""The checks of stock kept in several locations (docs/locations.md), read from the stock
database for the goods ids of a prefix:

L1 no location below zero: every named location's level, and the default's (the total less
   the named ones), is at least zero.
L2 each location's level replays from its entries: its adjustments, less what deductions took
   from it, plus what returns gave back to it, plus its transfer legs.
L3 every transfer's legs once: an out leg for each; an in leg exactly for the received and
   cancelled ones, at `to` for a receipt and at `from` for a cancel; units in transit are the
   in-transit transfers' units.
L4 the ledger holds with transfers: each goods id's level is the sum of all its entries
   (adjustments, deductions, returns, legs, hand-overs to backordered lines) since the ledger
   began.
L5 the allocation rule: no line split across locations when its allocation could have been
   had from one, and the rest of the rule (checked against the levels the ledger says each
   location had just before: allocation_rule.py's check_rule_held).
L2 and L5 replay the ledger the same way (ledger_replay.py)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from sqlalchemy import Engine, func, select
from sqlalchemy.engine import Connection

from inventory.check.ledger_replay import final_levels, read_ledger
from inventory.check.result import CheckResult
from stock_service.core.places import DEFAULT
from stock_service.storage.tables import (
    backorder_fill,
    stock,
    stock_adjustment,
    stock_flow,
    stock_location,
    stock_return,
    stock_transfer,
    stock_transfer_leg,
)


@dataclass
class Places:
    """What the location checks read, for the goods ids in scope."""

    totals: dict[str, int] = field(default_factory=dict)  # goods -> stock.num
    named: dict[tuple[str, str], int] = field(default_factory=dict)  # (goods, loc) -> num
    replayed: dict[tuple[str, str], int] = field(default_factory=dict)  # from the entries
    entries_sum: dict[str, int] = field(default_factory=dict)  # goods -> sum of all deltas
    transfers: list[tuple[str, str, str, str, int, str]] = field(default_factory=list)
    legs: dict[tuple[str, str], tuple[str, int]] = field(default_factory=dict)
    in_transit: dict[str, int] = field(default_factory=dict)  # goods -> units


def read_places(engine: Engine, prefix: str) -> Places:
    with engine.connect() as conn:
        return _read(conn, prefix)


def _sum_by(conn: Connection, query: object) -> dict[tuple[str, ...], int]:
    return {tuple(r[:-1]): int(r[-1] or 0) for r in conn.execute(query)}  # type: ignore[call-overload]


def _read(conn: Connection, prefix: str) -> Places:
    like = f"{prefix}%"
    p = Places()
    for row in conn.execute(
        select(stock.c.goods_id, stock.c.num).where(stock.c.goods_id.like(like))
    ):
        p.totals[row.goods_id] = int(row.num)
    sl = stock_location.c
    for named in conn.execute(
        select(sl.goods_id, sl.location_id, sl.num).where(sl.goods_id.like(like))
    ):
        p.named[(named.goods_id, named.location_id)] = int(named.num)
    # Each location's level replayed from the goods id's entries (ledger_replay.py): a
    # deduction or a return with no allocation rows moved the default location's units.
    for g, lines in read_ledger(conn, like=like).items():
        for loc, units in final_levels(lines).items():
            p.replayed[(g, loc)] = units
    adj = stock_adjustment.c
    lg = stock_transfer_leg.c
    flows = _sum_by(
        conn,
        select(stock_flow.c.goods_id, func.sum(stock_flow.c.num))
        .where(stock_flow.c.goods_id.like(like))
        .group_by(stock_flow.c.goods_id),
    )
    returns = _sum_by(
        conn,
        select(stock_return.c.goods_id, func.sum(stock_return.c.num))
        .where(stock_return.c.goods_id.like(like))
        .group_by(stock_return.c.goods_id),
    )
    adjusted_all = _sum_by(
        conn,
        select(adj.goods_id, func.sum(adj.delta))
        .where(adj.goods_id.like(like))
        .group_by(adj.goods_id),
    )
    legs_all = _sum_by(
        conn,
        select(lg.goods_id, func.sum(lg.delta)).where(lg.goods_id.like(like)).group_by(lg.goods_id),
    )
    bf = backorder_fill.c
    handed = _sum_by(
        conn,
        select(bf.goods_id, func.sum(bf.num)).where(bf.goods_id.like(like)).group_by(bf.goods_id),
    )
    for g in p.totals:
        k = (g,)
        p.entries_sum[g] = (
            adjusted_all.get(k, 0) - flows.get(k, 0) + returns.get(k, 0) + legs_all.get(k, 0)
        ) - handed.get(k, 0)
    t = stock_transfer.c
    for sent in conn.execute(
        select(t.transfer_id, t.goods_id, t.from_location, t.to_location, t.units, t.state).where(
            t.goods_id.like(like)
        )
    ):
        p.transfers.append(
            (
                sent.transfer_id,
                sent.goods_id,
                sent.from_location,
                sent.to_location,
                int(sent.units),
                sent.state,
            )
        )
    legs = select(lg.transfer_id, lg.leg, lg.location_id, lg.delta).where(lg.goods_id.like(like))
    for leg in conn.execute(legs):
        p.legs[(leg.transfer_id, leg.leg)] = (leg.location_id, int(leg.delta))
    return p


def check_locations(p: Places) -> list[CheckResult]:
    return [
        _no_location_below_zero(p),
        _locations_replay(p),
        _legs_once(p),
        _ledger_with_transfers(p),
    ]


def default_level(p: Places, goods_id: str) -> int:
    return p.totals.get(goods_id, 0) - sum(n for (g, _), n in p.named.items() if g == goods_id)


def _no_location_below_zero(p: Places) -> CheckResult:
    low = {f"{g}@{loc}": n for (g, loc), n in p.named.items() if n < 0}
    low.update({f"{g}@{DEFAULT}": default_level(p, g) for g in p.totals if default_level(p, g) < 0})
    detail = f"{len(p.named)} named levels and {len(p.totals)} default ones, none below zero"
    return CheckResult(
        "L1",
        "no location below zero",
        not low,
        detail if not low else f"below zero: {low}",
        {"below": low},
    )


def _locations_replay(p: Places) -> CheckResult:
    wrong = {
        f"{g}@{loc}": (n, p.replayed.get((g, loc), 0))
        for (g, loc), n in p.named.items()
        if n != p.replayed.get((g, loc), 0)
    }
    for g in p.totals:
        replayed = p.replayed.get((g, DEFAULT))
        if (
            replayed is not None
            and any(gg == g for gg, _ in p.named)
            and replayed != default_level(p, g)
        ):
            wrong[f"{g}@{DEFAULT}"] = (default_level(p, g), replayed)
    detail = f"{len(p.named)} named levels each equal to its entries replayed"
    return CheckResult(
        "L2",
        "each location replays from its entries",
        not wrong,
        detail if not wrong else f"level != replay: {wrong}",
        {"wrong": wrong},
    )


def _legs_once(p: Places) -> CheckResult:
    problems: list[str] = []
    moving: dict[str, int] = defaultdict(int)
    for tid, _g, source, target, units, state in p.transfers:
        out = p.legs.get((tid, "out"))
        into = p.legs.get((tid, "in"))
        if out != (source, -units):
            problems.append(f"{tid}: out leg {out}, not ({source}, {-units})")
        expected = {"in_transit": None, "received": (target, units), "cancelled": (source, units)}
        if into != expected.get(state, ("?", 0)):
            problems.append(f"{tid} ({state}): in leg {into}")
        if state == "in_transit":
            moving[_g] += units
    known = {t[0] for t in p.transfers}
    problems += [f"a leg of no transfer: {k}" for k in p.legs if k[0] not in known]
    detail = (
        f"{len(p.transfers)} transfers, {len(p.legs)} legs, {sum(moving.values())} units in transit"
    )
    return CheckResult(
        "L3",
        "every transfer's legs once",
        not problems,
        detail if not problems else "; ".join(problems[:10]),
        {"problems": problems, "in_transit": dict(moving)},
    )


def _ledger_with_transfers(p: Places) -> CheckResult:
    wrong = {
        g: (n, p.entries_sum.get(g, 0)) for g, n in p.totals.items() if n != p.entries_sum.get(g, 0)
    }
    detail = f"{len(p.totals)} goods ids: level = adjustments - flows + returns + legs - hand-overs"
    return CheckResult(
        "L4",
        "the ledger holds with transfers",
        not wrong,
        detail if not wrong else f"level != entries: {wrong}",
        {"wrong": wrong},
    )
