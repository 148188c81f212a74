"""One measured pair of `inventory bench --auth`: the same operation without and with
authentication, interleaved rounds, the median of each."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

from inventory.bench.limits import rate

PASSWORD = "bench-password"
ROUNDS = 5


@dataclass
class Pair:
    part: str
    what: str
    open_rate: float  # operations per second without authentication
    auth_rate: float  # with it

    @property
    def ratio(self) -> float:
        return self.auth_rate / self.open_rate if self.open_rate else 0.0

    @property
    def extra_us(self) -> float:
        """Microseconds more per operation with authentication (negative: within noise)."""
        return (1 / self.auth_rate - 1 / self.open_rate) * 1e6


def measure_pair(
    part: str, what: str, plain: Callable[[], object], authed: Callable[[], object], seconds: float
) -> Pair:
    """Rounds of each, interleaved (a drift of the machine touches both sides alike); the
    median rate of each side."""
    plain(), authed()  # connections, paths
    rounds: dict[str, list[float]] = {"open": [], "auth": []}
    for _ in range(ROUNDS):
        rounds["open"].append(rate(plain, seconds / ROUNDS))
        rounds["auth"].append(rate(authed, seconds / ROUNDS))
    return Pair(part, what, statistics.median(rounds["open"]), statistics.median(rounds["auth"]))
