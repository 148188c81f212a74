"""The order path's goals and what bounds each: genOrder against the one-database peer (its
rate on the hot goods id and on the spread, the stack's CPU per order, p99), on SQLite against
the deduction it exists for; and what a member of a batch costs each service against a lone
request. A goal missed says which measured part bounds it, in the figures of the same run."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Protocol

from inventory.bench.measures import COMBINING, Measure, Target, label


class BenchReport(Protocol):
    """What the goals read of a report (report.py's BenchReport, which judges itself by them)."""

    database: str
    concurrency: int
    lone: list[Measure]

    @property
    def spread(self) -> int: ...

    def reduce_of(self, config: str, goods: int) -> Measure | None: ...

    def order_of(self, goods: int, events: bool = True) -> Measure | None: ...

    def peer_of(self, goods: int) -> Measure | None: ...


# The peer goals: (goal, moonshot) of genOrder's rate over the peer's, hot goods id / spread.
HOT_RATE, SPREAD_RATE = (1.0, 1.5), (0.6, 0.8)
CPU_RATIO = (1.0, 0.7)  # the stack's CPU per order over the peer's, at most
P99_MS = 150.0
SQLITE_ORDER_OVER_REDUCE = 0.8  # genOrder / reduceStock, hot goods id, at least


def cores() -> int:
    return os.cpu_count() or 1


def total_ms(m: Measure) -> float:
    """CPU per request of every process, the client's too: the machine's cost of one."""
    return sum(m.cpu_ms.values())


def parts(m: Measure, client: bool = False) -> str:
    """`order service 2.40 ms at 4.0 orders per batch, stock service 1.90 ms at 6.0 requests
    per hold, zookeeper 0.50 ms, ...`: the stack's processes (and the client's, if asked),
    heaviest first, each service with its batch size."""
    out = []
    for name, ms in sorted(m.cpu_ms.items(), key=lambda kv: -kv[1]):
        if (name == "load" and not client) or not ms:
            continue
        text = f"{'client' if name == 'load' else name.replace('_', ' ')} {ms:.2f} ms"
        if name == "order_service" and m.orders_per_batch:
            text += f" at {m.orders_per_batch:.1f} orders per batch"
        if name == "stock_service" and m.requests_per_hold:
            text += f" at {m.requests_per_hold:.1f} requests per hold"
        out.append(text)
    return ", ".join(out)


def rate_bound(order: Measure, other: Measure, other_name: str, goal: float) -> str:
    """What holds genOrder's rate against `other`'s below `goal`: the CPU each spends per
    request (the client's included: it shares the cores), when at those costs the cores cannot
    give the goal's ratio; otherwise the waiting, the share of its CPU ceiling each reached."""
    flow, theirs = total_ms(order), total_ms(other)
    if not flow or not theirs:  # /proc counts 10 ms ticks: a short load can read none
        return f"no CPU read for {'genOrder' if not flow else other_name}: the load too short"
    ceiling, their_ceiling = cores() * 1000 / flow, cores() * 1000 / theirs
    costs = (
        f"{parts(order, client=True)}: the flow's CPU per order {flow:.2f} ms against "
        f"{other_name}'s {theirs:.2f} ms (the client's in both)"
    )
    if theirs / flow < goal:
        return (
            f"{costs}; on {cores()} cores that caps genOrder at {ceiling:.0f}/s and "
            f"{other_name} at {their_ceiling:.0f}/s, a ratio of at most {theirs / flow:.2f}"
        )
    return (
        f"not the CPU alone ({costs}, which allow a ratio up to {theirs / flow:.2f}): genOrder "
        f"ran at {order.per_second / ceiling:.0%} of its CPU ceiling ({ceiling:.0f}/s), "
        f"{other_name} at {other.per_second / their_ceiling:.0%} of its; genOrder's p50 "
        f"{order.p50_ms or 0:.0f} ms against {other.p50_ms or 0:.0f} ms, at "
        f"{order.orders_per_batch or 0:.1f} orders per batch and "
        f"{order.requests_per_hold or 0:.1f} requests per hold"
    )


def order_targets(report: BenchReport, hot: Measure | None) -> list[Target]:
    """On SQLite (no database server to share with a peer on equal terms) genOrder against
    reduceStock on the hot goods id; on every database, the peer's four goals."""
    out: list[Target] = []
    order_hot = report.order_of(1)
    if report.database == "sqlite" and order_hot and hot and hot.per_second:
        out.append(
            Target(
                "genOrder / reduceStock, hot goods",
                order_hot.per_second / hot.per_second,
                SQLITE_ORDER_OVER_REDUCE,
                figures=f"genOrder {order_hot.per_second:.0f}/s, "
                f"reduceStock {hot.per_second:.0f}/s",
                bound=rate_bound(order_hot, hot, "reduceStock", SQLITE_ORDER_OVER_REDUCE),
            )
        )
    return out + peer_targets(report)


def peer_targets(report: BenchReport) -> list[Target]:
    """genOrder beside the one-database peer, measured side by side: its rate on one hot goods
    id (>= 1.0x the peer's) and on the spread (>= 0.6x); the stack's CPU per order against the
    peer's (<= 1.0x, both loads); p99 (<= 150 ms, both loads)."""
    out: list[Target] = []
    loads = [("hot goods", report.order_of(1))]
    if report.spread > 1:
        loads.append((f"{report.spread} goods", report.order_of(report.spread)))
    pairs = [(g, o, report.peer_of(o.goods)) for g, o in loads if o is not None]
    for goods, order, peer in pairs:
        if peer and peer.per_second:
            goal, moonshot = HOT_RATE if order.goods == 1 else SPREAD_RATE
            out.append(
                Target(
                    f"genOrder / one-database peer, {goods}",
                    order.per_second / peer.per_second,
                    goal,
                    moonshot,
                    figures=f"genOrder {order.per_second:.0f}/s, peer {peer.per_second:.0f}/s",
                    bound=rate_bound(order, peer, "the peer", goal),
                )
            )
    # A peer turn short enough to read 0 clock ticks has no CPU to compare with.
    with_cpu: list[tuple[str, Measure, Measure]] = []
    for goods, order, peer in pairs:
        if peer is not None and order.cpu_ms and peer.stack_cpu_ms:
            with_cpu.append((goods, order, peer))
    if with_cpu:
        worst = max(with_cpu, key=lambda gop: gop[1].stack_cpu_ms / gop[2].stack_cpu_ms)
        out.append(
            Target(
                "genOrder stack CPU per order / the peer's",
                worst[1].stack_cpu_ms / worst[2].stack_cpu_ms,
                CPU_RATIO[0],
                CPU_RATIO[1],
                at_most=True,
                figures="; ".join(
                    f"{g}: {o.stack_cpu_ms:.2f} ms vs peer {p.stack_cpu_ms:.2f} ms"
                    for g, o, p in with_cpu
                ),
                bound=_cpu_bound(*worst),
            )
        )
    with_p99 = [(g, o, p) for g, o, p in pairs if o.p99_ms is not None]
    if with_p99:
        worst_p99 = max(with_p99, key=lambda gop: gop[1].p99_ms or 0.0)
        out.append(
            Target(
                f"genOrder p99 ms at {report.concurrency} callers, "
                + " and ".join(g for g, _, _ in with_p99),
                max(o.p99_ms or 0.0 for _, o, _ in with_p99),
                P99_MS,
                at_most=True,
                figures="; ".join(
                    f"{g}: {o.p99_ms:.0f}"
                    + (f" vs peer {p.p99_ms:.0f}" if p and p.p99_ms is not None else "")
                    for g, o, p in with_p99
                ),
                bound=_p99_bound(report.concurrency, *worst_p99),
            )
        )
    return out


def _cpu_bound(goods: str, order: Measure, peer: Measure) -> str:
    return (
        f"{goods}: {parts(order)}: the flow's {order.stack_cpu_ms:.2f} ms > the peer's "
        f"{peer.stack_cpu_ms:.2f} ms ({parts(peer)})"
    )


def _p99_bound(callers: int, goods: str, order: Measure, peer: Measure | None) -> str:
    """The callers wait, on average, callers / rate (Little's law): the rate, capped by the
    CPU per order, sets the queue the tail grows from; the peer's p99 on the same load says how
    much of the tail is the machine's."""
    if not order.per_second:
        return ""
    flow = total_ms(order)
    ceiling = f", the CPU's ceiling {cores() * 1000 / flow:.0f}/s at {flow:.2f} ms" if flow else ""
    beside = f"; the peer's p99 on it {peer.p99_ms:.0f} ms" if peer and peer.p99_ms else ""
    return (
        f"{goods}: p99 {order.p99_ms or 0:.0f} ms, p50 {order.p50_ms or 0:.0f} ms at "
        f"{order.per_second:.0f}/s: {callers} callers at that rate wait "
        f"{callers * 1000 / order.per_second:.0f} ms on average (callers / rate){ceiling}{beside}"
    )


@dataclass(frozen=True)
class MemberCost:
    """One service's CPU per request alone (one caller) and as a member of the batches of the
    bench's callers, with each side's mean batch."""

    service: str
    load: str
    lone_ms: float
    lone_batch: float | None
    member_ms: float
    member_batch: float | None

    @property
    def ratio(self) -> float | None:
        return self.member_ms / self.lone_ms if self.lone_ms else None


def member_costs(report: BenchReport) -> list[MemberCost]:
    """The order service's CPU per order and the stock service's per request, in genOrder and
    in reduceStock, each load of the default stack against the lone load of the same call."""
    lone_order = next((m for m in report.lone if m.name.startswith("genOrder")), None)
    lone_reduce = next((m for m in report.lone if m.name.startswith("reduceStock")), None)
    combined = label("zookeeper", "sku", COMBINING)
    out = []
    for goods in sorted({1, report.spread}):
        order, reduce = report.order_of(goods), report.reduce_of(combined, goods)
        if lone_order and order:
            for service, batch in (
                ("order_service", "orders_per_batch"),
                ("stock_service", "requests_per_hold"),
            ):
                if service in lone_order.cpu_ms and service in order.cpu_ms:
                    out.append(_cost(service, f"genOrder, {goods} goods", lone_order, order, batch))
        if lone_reduce and reduce and "stock_service" in reduce.cpu_ms:
            load = f"reduceStock, {goods} goods"
            out.append(_cost("stock_service", load, lone_reduce, reduce, "requests_per_hold"))
    return out


def _cost(service: str, load: str, lone: Measure, member: Measure, batch: str) -> MemberCost:
    return MemberCost(
        service,
        load,
        lone.cpu_ms.get(service, 0.0),
        getattr(lone, batch),
        member.cpu_ms.get(service, 0.0),
        getattr(member, batch),
    )
