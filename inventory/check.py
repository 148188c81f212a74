"""`inventory check`: the invariants of DESIGN.md, read from the order and stock databases
(SQLite, PostgreSQL or MySQL), each printed with its numbers.

I1 no oversell: no level below zero; initial - final = flows, per goods id (initial: the level
   of the last PUT /stock, counted with the flows of the same seed version, or given).
I2 at most one deduction per flag: no (flag, goods id) with two flows.
I3 orders match flows: every CONFIRMED order has its flows, for its quantities; no FAILED order
   has any.
I4 no lost sale: every order refused for lack of stock has a line whose final level is below
   its quantity. Levels only go down between two seeds, so a line that did not fit then cannot
   fit at the end; an order none of whose lines is short now was refused while its stock was
   there. Orders refused against an earlier seed version of their goods are not in scope (the
   stock was set again since). Where a one-unit order was refused, this is exact sell-out.
I5 liveness: no order left PENDING.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import Engine, func, select

from order_service.store import INSUFFICIENT_STOCK
from order_service.tables import order_details, orders
from shared.db import make_engine
from stock_service.tables import stock, stock_flow

REFUSED = (
    INSUFFICIENT_STOCK  # the reason the order service gives an order refused for lack of stock
)


@dataclass
class CheckResult:
    invariant: str
    name: str
    ok: bool
    detail: str
    numbers: dict[str, Any] = field(default_factory=dict)


@dataclass
class Snapshot:
    """What the checks read: levels, flows and orders of the goods in scope."""

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


def read_snapshot(order_engine: Engine, stock_engine: Engine, goods_prefix: str = "") -> Snapshot:
    like = f"{goods_prefix}%"
    with stock_engine.connect() as conn:
        levels = {
            r.goods_id: (int(r.num), int(r.seeded_num), int(r.seed_version))
            for r in conn.execute(select(stock).where(stock.c.goods_id.like(like)))
        }
        flow_sums = {
            (r.goods_id, int(r.seed_version)): int(r.total)
            for r in conn.execute(
                select(
                    stock_flow.c.goods_id,
                    stock_flow.c.seed_version,
                    func.sum(stock_flow.c.num).label("total"),
                )
                .where(stock_flow.c.goods_id.like(like))
                .group_by(stock_flow.c.goods_id, stock_flow.c.seed_version)
            )
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
        flows_by_flag: dict[str, dict[str, int]] = defaultdict(dict)
        for r in conn.execute(
            select(stock_flow.c.flag, stock_flow.c.goods_id, stock_flow.c.num).where(
                stock_flow.c.goods_id.like(like)
            )
        ):
            flows_by_flag[r.flag][r.goods_id] = flows_by_flag[r.flag].get(r.goods_id, 0) + r.num
    with order_engine.connect() as conn:
        lines: dict[str, dict[str, int]] = defaultdict(dict)
        refused: dict[str, dict[str, int | None]] = defaultdict(dict)
        in_scope = select(order_details.c.order_id).where(order_details.c.goods_id.like(like))
        for d in conn.execute(
            select(
                order_details.c.order_id,
                order_details.c.goods_id,
                order_details.c.goods_num,
                order_details.c.available,
                order_details.c.seed_version,
            ).where(order_details.c.order_id.in_(in_scope))
        ):
            lines[d.order_id][d.goods_id] = int(d.goods_num)
            if d.available is not None:
                refused[d.order_id][d.goods_id] = d.seed_version
        statuses, reasons = {}, {}
        for o in conn.execute(
            select(orders.c.id, orders.c.status, orders.c.reason).where(orders.c.id.in_(in_scope))
        ):
            statuses[o.id] = o.status
            reasons[o.id] = o.reason
    return Snapshot(
        levels,
        flow_sums,
        duplicate_flows,
        dict(flows_by_flag),
        statuses,
        dict(lines),
        reasons,
        dict(refused),
    )


def check_invariants(snap: Snapshot, initial: dict[str, int] | None = None) -> list[CheckResult]:
    initial = initial or {}
    return [
        check_no_negative_stock(snap),
        check_levels_match_flows(snap, initial),
        check_one_flow_per_flag(snap),
        check_orders_match_flows(snap),
        check_no_lost_sale(snap),
        check_no_pending(snap),
    ]


def check_no_negative_stock(snap: Snapshot) -> CheckResult:
    negative = {g: v[0] for g, v in snap.levels.items() if v[0] < 0}
    return CheckResult(
        "I1",
        "no negative stock",
        not negative,
        f"{len(negative)} of {len(snap.levels)} goods below zero"
        + (f": {_few(negative)}" if negative else ""),
        {"goods": len(snap.levels), "negative": negative},
    )


def check_levels_match_flows(snap: Snapshot, initial: dict[str, int]) -> CheckResult:
    off: dict[str, dict[str, int]] = {}
    sold = flowed = 0
    for goods, (num, seeded, version) in snap.levels.items():
        start = initial.get(goods, seeded)
        flows = snap.flow_sums.get((goods, version), 0)
        sold += start - num
        flowed += flows
        if start - num != flows:
            off[goods] = {
                "initial": start,
                "final": num,
                "flows": flows,
                "oversold": flows - start if flows > start else 0,
            }
    oversold = sum(v["oversold"] for v in off.values())
    detail = f"initial - final = {sold}, flows = {flowed}"
    if off:
        detail += f"; {len(off)} goods differ" + (f", oversold by {oversold}" if oversold else "")
        detail += f": {_few(off)}"
    return CheckResult(
        "I1",
        "initial - final = flows",
        not off,
        detail,
        {"deducted": sold, "flows": flowed, "mismatched": off, "oversold": oversold},
    )


def check_one_flow_per_flag(snap: Snapshot) -> CheckResult:
    dups = snap.duplicate_flows
    return CheckResult(
        "I2",
        "one flow per (flag, goods id)",
        not dups,
        f"{len(dups)} duplicated (flag, goods id)" + (f": {dups[:3]}" if dups else ""),
        {"duplicates": len(dups)},
    )


def check_orders_match_flows(snap: Snapshot) -> CheckResult:
    confirmed = [o for o, s in snap.orders.items() if s == "CONFIRMED"]
    failed = [o for o, s in snap.orders.items() if s == "FAILED"]
    missing = [o for o in confirmed if snap.flows_by_flag.get(o, {}) != snap.lines.get(o, {})]
    failed_with_flows = [o for o in failed if snap.flows_by_flag.get(o)]
    ok = not missing and not failed_with_flows
    return CheckResult(
        "I3",
        "orders match flows",
        ok,
        f"{len(confirmed)} confirmed ({len(missing)} without their flows), "
        f"{len(failed)} failed ({len(failed_with_flows)} with flows)",
        {
            "confirmed": len(confirmed),
            "failed": len(failed),
            "confirmed_without_flows": missing[:20],
            "failed_with_flows": failed_with_flows[:20],
        },
    )


def check_no_lost_sale(snap: Snapshot) -> CheckResult:
    """Each order refused for lack of stock needs a witness: a line whose goods' final level is
    below its quantity. Only lines of the goods' current seed version can witness (a level
    seeded again may have gone up); an order refused only against earlier seed versions is
    out of scope. Orders recorded without seed versions count as current."""
    refused = [
        o for o, s in snap.orders.items() if s == "FAILED" and snap.reasons.get(o) == REFUSED
    ]
    checked, stale, lost = 0, 0, {}
    for order_id in refused:
        lines = snap.lines.get(order_id, {})
        short = snap.refused.get(order_id) or dict.fromkeys(lines)
        current = [
            g
            for g, version in short.items()
            if g in snap.levels and version in (None, snap.levels[g][2])
        ]
        if not current:
            stale += 1
            continue
        checked += 1
        if not any(snap.levels[g][0] < lines[g] for g in current if g in lines):
            lost[order_id] = {g: {"wanted": lines[g], "final": snap.levels[g][0]} for g in current}
    detail = f"{checked} refused orders checked, {stale} from earlier seeds" + (
        f"; {len(lost)} refused while their stock was there: {_few(lost)}"
        if lost
        else ", each has a line that does not fit"
    )
    return CheckResult(
        "I4",
        "no lost sale",
        not lost,
        detail,
        {"checked": checked, "earlier_seeds": stale, "lost": lost},
    )


def check_no_pending(snap: Snapshot) -> CheckResult:
    pending = [o for o, s in snap.orders.items() if s == "PENDING"]
    return CheckResult(
        "I5",
        "every order final",
        not pending,
        f"{len(pending)} of {len(snap.orders)} orders still PENDING",
        {"pending": len(pending), "orders": len(snap.orders)},
    )


def _few(mapping: dict[str, Any], n: int = 3) -> str:
    items = list(mapping.items())
    text = ", ".join(f"{k} {v}" for k, v in items[:n])
    return text + (f" (+{len(items) - n} more)" if len(items) > n else "")


def run_check(
    order_url: str, stock_url: str, goods_prefix: str = "", initial: dict[str, int] | None = None
) -> list[CheckResult]:
    order_engine, stock_engine = make_engine(order_url), make_engine(stock_url)
    try:
        return check_invariants(read_snapshot(order_engine, stock_engine, goods_prefix), initial)
    finally:
        order_engine.dispose()
        stock_engine.dispose()


def results_json(results: list[CheckResult]) -> list[dict[str, Any]]:
    return [asdict(r) for r in results]


def print_results(results: list[CheckResult], console: Any) -> None:
    from rich.table import Table

    table = Table("", "check", "verdict", "numbers", title="invariants")
    for r in results:
        verdict = "[green]ok" if r.ok else "[bold red]VIOLATED"
        table.add_row(r.invariant, r.name, verdict, r.detail)
    console.print(table)
