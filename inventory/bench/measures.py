"""What one bench load measured (Measure), a ratio judged against its goal (Target), and the
names of the stacks' configurations: the types report.py gathers and goals.py judges."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

NO_LOCK = "none"
PEER = "one-database peer"  # the label of the peer's measures (inventory/bench/peer/)
COMBINING = 32  # DEDUCT_BATCH_MAX of the combining configurations (the service's default)
COMBINING_SUFFIX, SINGLE_SUFFIX = " combining", " one at a time"
OUTBOX_OFF = " outbox off"  # STOCK_EVENTS=false: no stock events written with the ledger


def label(backend: str, scope: str, batch_max: int, events: bool = True) -> str:
    """A configuration's name: `zookeeper/sku combining`, `redis/sku one at a time`, `none`,
    `zookeeper/sku combining outbox off`."""
    if backend == NO_LOCK:
        return NO_LOCK
    name = f"{backend}/{scope}" + (SINGLE_SUFFIX if batch_max == 1 else COMBINING_SUFFIX)
    return name + ("" if events else OUTBOX_OFF)


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
    # From the services' metrics over the load (batches.py): each batch counted once.
    orders_per_batch: float | None = None  # the order service's batches (genOrder)
    requests_per_hold: float | None = None  # the stock service's lock holds
    callers: int = 0  # concurrent callers of a lone measure (1); 0: the report's concurrency

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
    figures: str = ""  # the figures the value comes from, for a person
    bound: str = ""  # the measured part that bounds the value, said where the goal is missed

    @property
    def met(self) -> bool:
        return self.value <= self.goal if self.at_most else self.value >= self.goal
