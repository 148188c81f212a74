"""What `inventory bench` measured, the ratios it is judged by, and how it is shown: a table on
the terminal, bench.json and bench.png."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NO_LOCK = "none"
COMBINING = 32  # DEDUCT_BATCH_MAX of the combining configurations (the service's default)
COMBINING_SUFFIX, SINGLE_SUFFIX = " combining", " one at a time"


def label(backend: str, scope: str, batch_max: int) -> str:
    """A configuration's name: `zookeeper/sku combining`, `redis/sku one at a time`, `none`."""
    if backend == NO_LOCK:
        return NO_LOCK
    return f"{backend}/{scope}" + (SINGLE_SUFFIX if batch_max == 1 else COMBINING_SUFFIX)


@dataclass
class Measure:
    name: str
    per_second: float  # median over the rounds
    rounds: list[float] = field(default_factory=list)  # per-round rates
    p50_ms: float | None = None  # over every round's latencies together
    p99_ms: float | None = None
    batch_mean: float | None = None  # requests per lock hold, as the answers report it
    batch_p99: float | None = None
    stages_ms: dict[str, float] = field(default_factory=dict)  # medians from Server-Timing
    cpu_ms: dict[str, float] = field(default_factory=dict)  # CPU per request, by process
    errors: int = 0
    config: str = ""  # the stack's configuration label, for reduceStock measures
    goods: int = 0  # goods ids the load spread over

    @property
    def stack_cpu_ms(self) -> float:
        """CPU per request of the stack's processes, the load generator left out."""
        return sum(v for k, v in self.cpu_ms.items() if k != "load")

    @property
    def cpu_ceiling(self) -> float | None:
        """Requests per second the machine's cores allow at this CPU cost per request."""
        total = sum(self.cpu_ms.values())
        return (os.cpu_count() or 1) * 1000 / total if total else None


@dataclass(frozen=True)
class Target:
    name: str
    value: float
    goal: float
    moonshot: float | None = None
    at_most: bool = False  # the value must stay at or below the goal (a latency ratio)

    @property
    def met(self) -> bool:
        return self.value <= self.goal if self.at_most else self.value >= self.goal


@dataclass
class BenchReport:
    database: str
    concurrency: int
    rounds: int
    limits: list[Measure] = field(default_factory=list)
    reduce: list[Measure] = field(default_factory=list)
    gen_order: list[Measure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, path: Path) -> BenchReport:
        """A report read back from its bench.json (to draw its chart again, say)."""
        data = json.loads(path.read_text())
        return cls(
            database=str(data["database"]),
            concurrency=int(data["concurrency"]),
            rounds=int(data["rounds"]),
            limits=[Measure(**m) for m in data["limits"]],
            reduce=[Measure(**m) for m in data["reduce"]],
            gen_order=[Measure(**m) for m in data["gen_order"]],
            notes=list(data["notes"]),
        )

    def find(self, name: str) -> Measure | None:
        return next((m for m in self.limits + self.reduce + self.gen_order if m.name == name), None)

    def reduce_of(self, config: str, goods: int) -> Measure | None:
        return next((m for m in self.reduce if m.config == config and m.goods == goods), None)

    def order_of(self, goods: int) -> Measure | None:
        return next((m for m in self.gen_order if m.goods == goods), None)

    @property
    def spread(self) -> int:
        return max((m.goods for m in self.reduce), default=0)

    def raw_lock_cycle(self) -> Measure | None:
        """The faster of the two raw kazoo loops (kazoo's own handler, or this project's),
        so the ratio against it is the stricter one."""
        loops = [m for m in self.limits if m.name.startswith("kazoo lock cycle")]
        return max(loops, key=lambda m: m.per_second, default=None)

    def targets(self) -> list[Target]:
        out: list[Target] = []
        combined, single = label("zookeeper", "sku", COMBINING), label("zookeeper", "sku", 1)
        hot, hot_single = self.reduce_of(combined, 1), self.reduce_of(single, 1)
        hot_none = self.reduce_of(NO_LOCK, 1)
        wide, wide_none = (
            self.reduce_of(combined, self.spread),
            self.reduce_of(NO_LOCK, self.spread),
        )
        raw = self.raw_lock_cycle()
        if hot and hot_none and hot_none.per_second:
            ratio = hot.per_second / hot_none.per_second
            out.append(Target("zookeeper hot goods / no lock", ratio, 0.8, 0.95))
        if hot and raw and raw.per_second:
            ratio = hot.per_second / raw.per_second
            out.append(Target("zookeeper hot goods / raw kazoo lock cycle", ratio, 1.0, 1.5))
        if wide and wide_none and wide_none.per_second and self.spread > 1:
            ratio = wide.per_second / wide_none.per_second
            out.append(Target(f"zookeeper {self.spread} goods / no lock", ratio, 0.8))
        if hot and hot_single and hot.p99_ms and hot_single.p99_ms:
            ratio = hot.p99_ms / hot_single.p99_ms
            name = "zookeeper hot goods p99: combining / one at a time"
            out.append(Target(name, ratio, 1.0, at_most=True))
        return out + self.order_targets(hot)

    def order_targets(self, hot: Measure | None) -> list[Target]:
        """The order a buyer places, against the deduction it exists for (same stack)."""
        out: list[Target] = []
        order_hot = self.order_of(1)
        if order_hot and hot and hot.per_second:
            ratio = order_hot.per_second / hot.per_second
            out.append(Target("genOrder / reduceStock, hot goods", ratio, 0.6, 0.8))
        for order in (order_hot, self.order_of(self.spread)):
            if order is None:
                continue
            goods = "hot goods" if order.goods == 1 else f"{order.goods} goods"
            if order.cpu_ms:
                name = f"genOrder stack CPU ms per order, {goods}"
                out.append(Target(name, order.stack_cpu_ms, 7.0, 5.0, at_most=True))
            if order.p99_ms:
                name = f"genOrder p99 ms at {self.concurrency} callers, {goods}"
                out.append(Target(name, order.p99_ms, 300.0, at_most=True))
        return out

    def ratios(self) -> dict[str, float]:
        """Every target's ratio, and what combining gains per backend and load."""
        out = {t.name: round(t.value, 3) for t in self.targets()}
        for m in self.reduce:
            if m.config.endswith(COMBINING_SUFFIX):
                base = m.config.removesuffix(COMBINING_SUFFIX)
                single = self.reduce_of(base + SINGLE_SUFFIX, m.goods)
                if single and single.per_second:
                    name = f"{base} {m.goods} goods: combining / one at a time"
                    out[name] = round(m.per_second / single.per_second, 3)
        return out


def print_report(report: BenchReport, console: Any) -> None:
    """Tables that fit 80 columns: the figures, then rounds and ceilings, then the stages."""
    from rich.table import Table

    measures = report.limits + report.reduce + report.gen_order
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
        caption="batch: mean / p99 requests per lock hold; CPU ms: per request, every process",
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
    orders = Table("genOrder", "CPU ms per order, by process", title="what an order costs")
    for m in report.gen_order:
        orders.add_row(
            _short(m.name),
            " ".join(f"{k} {v}" for k, v in m.cpu_ms.items()) + f" (stack {m.stack_cpu_ms:.2f})",
        )
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
    if report.gen_order:
        console.print(orders)
    targets = Table("ratio", "value", "goal", "", title="targets")
    for t in report.targets():
        goal = f"{'<=' if t.at_most else '>='} {t.goal}" + (
            f" (moonshot {t.moonshot})" if t.moonshot else ""
        )
        verdict = "[green]met" if t.met else "[red]missed"
        targets.add_row(t.name, f"{t.value:.2f}", goal, verdict)
    console.print(targets)
    gains = Table("combining / one hold each", "ratio", title="what combining gains")
    for name, value in report.ratios().items():
        if "combining / one at a time" in name and "p99" not in name:
            gains.add_row(name.removesuffix(": combining / one at a time"), f"{value:.2f}")
    console.print(gains)
    for note in report.notes:
        console.print(f"note: {note}")
    if any(not t.met for t in report.targets()):
        console.print(
            "note: a missed target says this run's ratio fell short of its goal; rates move "
            "with the machine, ratios less: run again, or with --rounds 5, before concluding"
        )


def _short(name: str) -> str:
    """`reduceStock zookeeper/sku combining, 1 goods` -> `zk/sku combining, 1`."""
    return (
        name.removeprefix("reduceStock ")
        .replace("zookeeper", "zk")
        .replace(" one at a time", " one-by-one")
        .replace(" goods", "")
        .replace("genOrder end to end", "genOrder")
        .replace(" (polling handler)", " (polling)")
        .replace("update+commit", "update")
    )


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}"
