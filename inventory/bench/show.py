"""How `inventory bench` shows a report on the terminal: tables that fit 80 columns."""

from __future__ import annotations

import os
from typing import Any

from inventory.bench.report import BenchReport
from inventory.bench.show_orders import (
    goal_text,
    print_batches,
    print_members,
    print_order_goals,
    verdict,
)


def print_report(report: BenchReport, console: Any) -> None:
    """Tables that fit 80 columns: the figures, then rounds and ceilings, then the stages."""
    from rich.table import Table

    measures = report.limits + report.reduce + report.gen_order + report.lone + report.peer
    table = Table(
        "measure",
        "per s",
        "p50 ms",
        "p99 ms",
        "batch",
        "CPU ms",
        "err",
        title=(
            f"inventory bench: {report.database}, {os.cpu_count()} cores, "
            f"{report.concurrency} callers, median of {report.rounds} round(s)"
        ),
        caption="batch: mean / p99 requests per lock hold (genOrder: orders per batch of the "
        "order service); CPU ms: per request, every process"
        + (
            "; no outbox: zk/sku combining with STOCK_EVENTS=false" if report.outbox_pairs() else ""
        ),
    )
    table.columns[0].no_wrap = True
    for m in measures:
        batch = f"{m.batch_mean:.1f}/{m.batch_p99:.0f}" if m.batch_mean is not None else ""
        cpu = f"{sum(m.cpu_ms.values()):.2f}" if m.cpu_ms else ""
        table.add_row(
            _short(m.name), f"{m.per_second:.0f}", _fmt(m.p50_ms), _fmt(m.p99_ms), batch, cpu,
            str(m.errors),
        )  # fmt: skip
    console.print(table)
    spread = Table("measure", "per s, each round", "CPU ceiling/s", title="rounds and ceilings")
    spread.columns[0].no_wrap = True
    for m in measures:
        ceiling = f"{m.cpu_ceiling:.0f}" if m.cpu_ceiling else ""
        spread.add_row(_short(m.name), " ".join(f"{r:.0f}" for r in m.rounds), ceiling)
    console.print(spread)
    stages = Table(
        "reduceStock",
        "median stage ms (Server-Timing)",
        "CPU ms per request, by process",
        title="where the time goes",
    )
    for m in report.reduce:
        stages.add_row(
            _short(m.name),
            " ".join(f"{k} {v}" for k, v in m.stages_ms.items()),
            " ".join(f"{k} {v}" for k, v in m.cpu_ms.items()),
        )
    console.print(stages)
    print_batches(report, console)
    print_members(report, console)
    print_outbox(report, console)
    all_targets = report.targets()
    targets = Table("ratio", "value", "goal", "", title="targets")
    for t in all_targets:
        if not t.figures:
            targets.add_row(t.name, f"{t.value:.2f}", goal_text(t), verdict(t))
    console.print(targets)
    print_order_goals(report, console, all_targets)
    gains = Table("combining / one hold each", "ratio", title="what combining gains")
    for name, value in report.ratios().items():
        if "combining / one at a time" in name and "p99" not in name:
            gains.add_row(name.removesuffix(": combining / one at a time"), f"{value:.2f}")
    if gains.row_count:  # --order-path measures no stack one request per hold
        console.print(gains)
    for note in report.notes:
        console.print(f"note: {note}")
    if any(not t.met for t in all_targets):
        console.print(
            "note: a missed target says this run's ratio fell short of its goal; rates move "
            "with the machine, ratios less: run again, or with --rounds 5, before concluding"
        )


def print_outbox(report: BenchReport, console: Any) -> None:
    """What the outbox costs (--order-path): the ZooKeeper stack with combining with stock
    events written (the default) and with STOCK_EVENTS=false, same run, same rounds; the rates,
    the stack's CPU per request (the client left out) and each process's, with the ratios."""
    from rich.table import Table

    pairs = report.outbox_pairs()
    if not pairs:
        return
    table = Table(
        "zk/sku combining",
        "on /s",
        "off /s",
        "on/off",
        "CPU on",
        "CPU off",
        "on/off",
        title="the outbox: stock events on (default) vs off (STOCK_EVENTS=false)",
        caption="CPU: ms per request of the stack's processes, the client left out",
    )
    processes = Table(
        "zk/sku combining",
        "process",
        "CPU on",
        "CPU off",
        "on/off",
        title="the outbox, by process: CPU ms per request",
    )
    for load, on, off in pairs:
        table.add_row(
            load,
            f"{on.per_second:.0f}",
            f"{off.per_second:.0f}",
            _ratio(on.per_second, off.per_second),
            f"{on.stack_cpu_ms:.2f}",
            f"{off.stack_cpu_ms:.2f}",
            _ratio(on.stack_cpu_ms, off.stack_cpu_ms),
        )
        names = [*on.cpu_ms, *(k for k in off.cpu_ms if k not in on.cpu_ms)]
        for i, name in enumerate(names):
            cpu_on, cpu_off = on.cpu_ms.get(name, 0.0), off.cpu_ms.get(name, 0.0)
            processes.add_row(
                "" if i else load,
                name,
                f"{cpu_on:.2f}",
                f"{cpu_off:.2f}",
                _ratio(cpu_on, cpu_off),
                end_section=i == len(names) - 1,
            )
    console.print(table)
    console.print(processes)


def _ratio(on: float, off: float) -> str:
    return f"{on / off:.2f}" if off else ""


def _short(name: str) -> str:
    """`reduceStock zookeeper/sku combining, 1 goods` -> `zk/sku combining, 1`."""
    return (
        name.removeprefix("reduceStock ")
        .replace(" combining, 1 goods, 1 caller", " 1 caller")
        .replace("zookeeper", "zk")
        .replace(" one at a time", " one-by-one")
        .replace(" combining outbox off", " no outbox")
        .replace(" goods", "")
        .replace("genOrder end to end", "genOrder")
        .replace(" (polling handler)", " (polling)")
        .replace("update+commit", "update")
        .replace("one-database peer", "peer (1 db)")
    )


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}"
