"""What a bench round measured, pooled over the rounds: rates, latencies, batch sizes, stages
and the CPU of each process; and how a load's CPU is taken (the processes' from /proc, and on
PostgreSQL the bench database's backends: pg_cpu.py)."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from inventory.bench.batches import BatchCounts
from inventory.bench.loads import LoadResult, stage_medians
from inventory.bench.measures import Measure
from inventory.bench.pg_cpu import DatabaseCpu
from inventory.load.cpu import snapshot


@dataclass
class Tally:
    """Every round of one (configuration, goods count)."""

    rates: list[float] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    batch_sizes: list[int] = field(default_factory=list)
    stages: dict[str, list[float]] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)
    requests: int = 0
    errors: int = 0
    batches: BatchCounts = field(default_factory=BatchCounts)  # from the services' metrics

    def add(self, result: LoadResult, cpu: dict[str, float]) -> None:
        self.rates.append(result.run.per_second)
        self.latencies += result.latencies
        self.batch_sizes += result.batch_sizes
        for stage, values in result.stages.items():
            self.stages.setdefault(stage, []).extend(values)
        for name, seconds in cpu.items():
            self.cpu[name] = self.cpu.get(name, 0.0) + seconds
        self.requests += len(result.run.answers)
        self.errors += len(result.run.answers) - result.ok

    def measure(self, name: str, config: str, goods: int, callers: int = 0) -> Measure:
        """CPU per successful request (a confirmed order, a deduction), by process."""
        succeeded = max(self.requests - self.errors, 1)
        return Measure(
            name,
            statistics.median(self.rates),
            [round(r, 1) for r in self.rates],
            percentile_ms(self.latencies, 50),
            percentile_ms(self.latencies, 99),
            round(statistics.fmean(self.batch_sizes), 2) if self.batch_sizes else None,
            float(percentile(self.batch_sizes, 99)) if self.batch_sizes else None,
            stage_medians(self.stages),
            {k: round(v * 1000 / succeeded, 2) for k, v in self.cpu.items()},
            self.errors,
            config,
            goods,
            self.batches.orders_per_batch,
            self.batches.requests_per_hold,
            callers,
        )


def percentile(values: list[Any], p: float) -> Any:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def percentile_ms(values: list[float], p: float) -> float | None:
    return round(percentile(values, p) * 1000, 2) if values else None


def measured(
    pids: dict[str, int],
    database: DatabaseCpu | None,
    run: Callable[[], LoadResult],
) -> tuple[LoadResult, dict[str, float]]:
    """A load and the CPU seconds each process spent during it: `pids` with their children
    (gunicorn's workers, the servers), except `load` (the bench's own process, alone); and the
    database's backends by application, when `database` is given."""
    before = snapshot(pids, alone=frozenset({"load"}))
    if database is not None:
        database.start()
    try:
        result = run()
    finally:
        backends = database.stop() if database is not None else {}
    after = snapshot(pids, alone=frozenset({"load"}))
    return result, {**{name: after[name] - before[name] for name in pids}, **backends}
