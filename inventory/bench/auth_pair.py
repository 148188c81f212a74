"""One measured pair of `inventory bench --auth`: the same operation without and with
authentication (or TLS, or a change such as a shared TLS context), interleaved rounds, the
median rate of each side, and the client's CPU per operation on each side."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

PASSWORD = "bench-password"
ROUNDS = 5


@dataclass
class Pair:
    part: str
    what: str
    open_rate: float  # operations per second without authentication
    auth_rate: float  # with it
    # The bench process's CPU per operation (time.process_time: every thread, kazoo's and
    # redis-py's included), in µs: what the client pays, where the rate also waits on a server.
    open_cpu_us: float | None = None
    auth_cpu_us: float | None = None

    @property
    def ratio(self) -> float:
        return self.auth_rate / self.open_rate if self.open_rate else 0.0

    @property
    def extra_us(self) -> float:
        """Microseconds more per operation with authentication (negative: within noise)."""
        return (1 / self.auth_rate - 1 / self.open_rate) * 1e6


def rate_and_cpu(fn: Callable[[], object], seconds: float) -> tuple[float, float, int]:
    """Sequential calls of fn for about `seconds`: (calls per second, CPU seconds of the process
    over them, calls)."""
    count, cpu, started = 0, time.process_time(), time.perf_counter()
    while time.perf_counter() - started < seconds:
        fn()
        count += 1
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    return count / elapsed, cpu, count


def measure_pair(
    part: str, what: str, plain: Callable[[], object], authed: Callable[[], object], seconds: float
) -> Pair:
    """Rounds of each, interleaved (a drift of the machine touches both sides alike); the
    median rate of each side, and its CPU per operation over all its rounds."""
    plain(), authed()  # connections, paths
    rates: dict[str, list[float]] = {"open": [], "auth": []}
    cpu = {"open": 0.0, "auth": 0.0}
    calls = {"open": 0, "auth": 0}
    for _ in range(ROUNDS):
        for side, fn in (("open", plain), ("auth", authed)):
            per_second, seconds_of_cpu, count = rate_and_cpu(fn, seconds / ROUNDS)
            rates[side].append(per_second)
            cpu[side] += seconds_of_cpu
            calls[side] += count
    return Pair(
        part,
        what,
        statistics.median(rates["open"]),
        statistics.median(rates["auth"]),
        cpu["open"] * 1e6 / max(calls["open"], 1),
        cpu["auth"] * 1e6 / max(calls["auth"], 1),
    )
