"""Per-stage timings of a request, sent back as a standard `Server-Timing` header so a
benchmark can say which stage bounds a path without a profiler attached."""

from __future__ import annotations

import time


class Stopwatch:
    def __init__(self) -> None:
        self._last = time.perf_counter()
        self.laps: dict[str, float] = {}

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.laps[stage] = self.laps.get(stage, 0.0) + (now - self._last) * 1000
        self._last = now

    def header(self) -> str:
        return ", ".join(f"{stage};dur={ms:.2f}" for stage, ms in self.laps.items())


def parse_server_timing(header: str) -> dict[str, float]:
    stages: dict[str, float] = {}
    for part in header.split(","):
        name, _, rest = part.strip().partition(";dur=")
        if name and rest:
            stages[name] = float(rest)
    return stages
