"""How `inventory bench` shows the order path: the batches of both sides beside each load's CPU
per request by process, what a member of a batch costs each service against a lone request,
and the order path's goals, each missed one with the measured part that bounds it."""

from __future__ import annotations

from typing import Any

from inventory.bench.goals import member_costs
from inventory.bench.measures import Measure, Target
from inventory.bench.report import BenchReport


def batch_cell(value: float | None) -> str:
    return f"{value:.1f}" if value is not None else ""


def print_batches(report: BenchReport, console: Any) -> None:
    """Per load: orders per order-side batch, requests per lock hold (both from the services'
    metrics, each batch counted once), and the CPU ms per request of each process."""
    from rich.table import Table

    rows = report.reduce + report.gen_order + report.lone + report.peer
    if not rows:
        return
    table = Table(
        "load",
        "orders\n/batch",
        "req.\n/hold",
        "stack\nms",
        "CPU ms per request, by process",
        title="batches and CPU per request",
        caption="orders /batch: the order service's batches; req. /hold: requests per lock "
        "hold of the stock service (both from their metrics); stack: every process but the "
        "client; pg: the bench database's backends, by application",
    )
    table.columns[0].no_wrap = True
    for m in rows:
        table.add_row(
            row_label(m.name),
            batch_cell(m.orders_per_batch),
            batch_cell(m.requests_per_hold),
            f"{m.stack_cpu_ms:.2f}" if m.cpu_ms else "",
            cpu_by_process(m),
        )
    console.print(table)


def row_label(name: str) -> str:
    """`genOrder zookeeper/sku combining, 1 goods, 1 caller` -> `genOrder zk, 1, 1 caller`."""
    return (
        name.replace("zookeeper/sku combining outbox off", "zk no outbox")
        .replace("zookeeper/sku combining", "zk")
        .replace("zookeeper/sku one at a time", "zk one-by-one")
        .replace("one-database peer", "peer")
        .replace(" goods", "")
        .replace("reduceStock ", "reduce ")
    )


SHORT = {"order_service": "order", "stock_service": "stock", "zookeeper": "zk", "load": "client"}


def cpu_by_process(m: Measure) -> str:
    """`order=1.93 stock=1.48 zk=0.50 pg-order=0.29 ... client=0.41`, the zeros left out; each
    a word of its own, so a narrow column wraps between them, never inside one."""
    return " ".join(
        f"{SHORT.get(k, k.replace('postgres ', 'pg-'))}={v:.2f}" for k, v in m.cpu_ms.items() if v
    )


def print_members(report: BenchReport, console: Any) -> None:
    """Each service's CPU per request with one caller (its batches of one) against its CPU per
    request as a member of the batches of the bench's callers, and the ratio: what the batch
    saves each member."""
    from rich.table import Table

    costs = member_costs(report)
    if not costs:
        return
    table = Table(
        "service",
        "load",
        "lone",
        "batch",
        "member",
        "batch",
        "member\n/lone",
        title=f"what a member costs: 1 caller vs {report.concurrency}, CPU ms per request",
        caption="batch: orders per batch (order service), requests per lock hold (stock "
        "service); lone: the hot goods id, one caller",
    )
    for c in costs:
        table.add_row(
            c.service.removesuffix("_service"),
            c.load,
            f"{c.lone_ms:.2f}",
            batch_cell(c.lone_batch),
            f"{c.member_ms:.2f}",
            batch_cell(c.member_batch),
            f"{c.ratio:.2f}" if c.ratio is not None else "",
        )
    console.print(table)


def print_order_goals(report: BenchReport, console: Any, targets: list[Target]) -> None:
    """The order path's goals, each with its figures; a missed one with what bounds it."""
    beside = [t for t in targets if t.figures]
    if not beside:
        return
    console.print(f"the order path's goals ({report.database}, same run, client and rounds):")
    for t in beside:
        console.print(
            f"  {t.name}: {t.value:.2f} ({goal_text(t)}): {verdict(t)}[/]\n    {t.figures}",
            highlight=False,
        )
        if not t.met and t.bound:
            console.print(f"    bounded by: {t.bound}", highlight=False)


def goal_text(t: Target) -> str:
    return f"{'<=' if t.at_most else '>='} {t.goal}" + (
        f", moonshot {t.moonshot}" if t.moonshot else ""
    )


def verdict(t: Target) -> str:
    return "[green]met" if t.met else "[red]missed"
