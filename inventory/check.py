"""`inventory check`: the invariants of DESIGN.md, read from the order and stock databases
(SQLite, PostgreSQL or MySQL), each printed with its numbers.

I1 no oversell: no level below zero; initial - final = flows, per goods id (initial: the level
   of the last PUT /stock, counted with the flows of the same seed version, or given).
I2 at most one deduction per flag: no (flag, goods id) with two flows.
I3 orders match flows: every CONFIRMED order has its flows, for its quantities; no FAILED order
   has any.
I4 no lost sale: where demand exceeds supply (single-line orders), stock reaches exactly zero
   and the confirmed quantity equals the initial level.
I5 liveness: no order left PENDING.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import Engine, func, select

from order_service.tables import order_details, orders
from shared.db import make_engine
from stock_service.tables import stock, stock_flow


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
        in_scope = select(order_details.c.order_id).where(order_details.c.goods_id.like(like))
        for r in conn.execute(
            select(
                order_details.c.order_id, order_details.c.goods_id, order_details.c.goods_num
            ).where(order_details.c.order_id.in_(in_scope))
        ):
            lines[r.order_id][r.goods_id] = int(r.goods_num)
        statuses = {
            r.id: r.status
            for r in conn.execute(
                select(orders.c.id, orders.c.status).where(orders.c.id.in_(in_scope))
            )
        }
    return Snapshot(levels, flow_sums, duplicate_flows, dict(flows_by_flag), statuses, dict(lines))


def check_invariants(snap: Snapshot, initial: dict[str, int] | None = None) -> list[CheckResult]:
    initial = initial or {}
    return [
        check_no_negative_stock(snap),
        check_levels_match_flows(snap, initial),
        check_one_flow_per_flag(snap),
        check_orders_match_flows(snap),
        check_sellout(snap, initial),
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


def check_sellout(snap: Snapshot, initial: dict[str, int]) -> CheckResult:
    """Only where every order naming the goods is single-line: a multi-line order may fail for
    another line's shortage, which is no lost sale of this one."""
    demand: dict[str, int] = defaultdict(int)
    multi_line: set[str] = set()
    for goods_lines in snap.lines.values():
        for goods, num in goods_lines.items():
            demand[goods] += num
            if len(goods_lines) > 1:
                multi_line.add(goods)
    confirmed_qty: dict[str, int] = defaultdict(int)
    for order_id, status in snap.orders.items():
        if status == "CONFIRMED":
            for goods, num in snap.lines.get(order_id, {}).items():
                confirmed_qty[goods] += num
    checked, lost = 0, {}
    for goods, (num, seeded, _version) in snap.levels.items():
        start = initial.get(goods, seeded)
        if goods in multi_line or demand.get(goods, 0) < start:
            continue
        checked += 1
        if num != 0 or confirmed_qty[goods] != start:
            lost[goods] = {
                "initial": start,
                "demand": demand[goods],
                "final": num,
                "confirmed": confirmed_qty[goods],
            }
    detail = f"{checked} goods with demand >= supply" + (
        f"; {len(lost)} not sold out exactly: {_few(lost)}" if lost else ", all sold out exactly"
    )
    return CheckResult(
        "I4", "exact sell-out", not lost, detail, {"checked": checked, "not_sold_out": lost}
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
