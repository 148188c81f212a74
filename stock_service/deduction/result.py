"""What a deduction answers its route: the outcome, the rows its commit wrote, where its units
came from, and its hold (steps.py, batched_call.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from shared.timing import Stopwatch
from stock_service.core import Decision, Outcome, Shortfall
from stock_service.deduction.holds import Hold


@dataclass
class DeductionResult:
    outcome: Outcome
    shortfalls: list[Shortfall] = field(default_factory=list)
    flows: list[dict[str, Any]] = field(default_factory=list)  # those a deduction committed
    allocations: list[tuple[str, str, int]] = field(default_factory=list)  # goods, where, units
    backordered: dict[str, int] = field(default_factory=dict)  # goods id -> units still owed
    hold: Hold | None = None  # None: answered before the lock, from Redis and the database
    timings: Stopwatch = field(default_factory=Stopwatch)


def result_of(decision: Decision, hold: Hold, watch: Stopwatch) -> DeductionResult:
    return DeductionResult(
        decision.outcome,
        decision.shortfalls,
        decision.flows,
        decision.allocations,
        decision.backordered,
        hold,
        watch,
    )
