"""How `inventory bench` shows the order path: the batches of both sides beside each load's CPU
per request by process, what a member of a batch costs each service against a lone request,
and the order path's goals, each missed one with the measured part that bounds it."""

from __future__ import annotations

from typing import Any

from inventory.bench.goals import member_costs
from inventory.bench.report import BenchReport, Measure, Target


def batch_cell(value: float | None) -> str:
    return f"{value:.1f}" if value is not None else ""


def print_batches(report: BenchReport, console: Any, short: Any) -> None:
    """Per load: orders per order-side batch, requests per lock hold (both from the services'
    metrics, each batch counted once), and the CPU ms per request of each process."""
    from rich.table import Table

    rows = report.reduce + report.gen_order + report.lone + report.peer
    if not rows:
        return
    table = Table(
        "measure",
        "orders /batch",
        "req. /hold",
        "CPU ms per request, by process (stack: the client left out)",
        title="batches and CPU per request",
        caption="orders /batch: the order service's batches; req. /hold: requests per lock "
        "hold of the stock service; 1 caller: the lone loads",
    )
    table.columns[0].no_wrap = True
    for m in rows:
        table.add_row(
            short(m.name),
            batch_cell(m.orders_per_batch),
            batch_cell(m.requests_per_hold),
            cpu_by_process(m),
        )
    console.print(table)


def cpu_by_process(m: Measure) -> str:
    parts = " ".join(f"{k} {v:.2f}" for k, v in m.cpu_ms.items())
    return f"{parts} (stack {m.stack_cpu_ms:.2f})" if m.cpu_ms else ""


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
        "lone ms",
        "batch",
        "member ms",
        "batch",
        "member /lone",
        title=f"what a member costs: 1 caller vs {report.concurrency}, CPU ms per request",
        caption="batch: orders per batch (order service), requests per lock hold (stock "
        "service); lone: the hot goods id, one caller",
    )
    for c in costs:
        table.add_row(
            c.service.replace("_", " "),
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
