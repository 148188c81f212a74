"""What the allocation rule costs under the lock at its limits: 100 lines over a thousand
locations (no location fills every line, all of them useful: the greedy cover) and over ten
(the exact search at its worst: every set passes ninety lines before it fails), each timed in
CPU over several rounds. Prints the median and the worst per case.

    python -m inventory.bench.allocation_cost [--rounds N]

Not part of `inventory bench`: the rule's own cost, measured on its own (docs/locations.md
gives the figures). A target belongs here, never in a timed test."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence

from stock_service.core.allocation import Line, Location, allocate


def cases() -> dict[str, tuple[list[Line], list[Location], dict[str, dict[str, int]]]]:
    """The two worst shapes: each line fits every other location from an offset of its own
    (a thousand useful locations), and ten locations where each of ninety lines misses one."""
    many = [Location(i, f"l{i:04d}") for i in range(1000)]
    wide = {
        f"g{n:03d}": {f"l{i:04d}": 5 if (i + n) % 2 == 0 or i == n else 0 for i in range(1000)}
        for n in range(100)
    }
    narrow = {
        f"g{n:03d}": {
            f"l{i:04d}": 5 if (i != n % 10 if n < 90 else i == n - 90) else 0 for i in range(10)
        }
        for n in range(100)
    }
    return {
        "100 lines, 1000 useful locations (greedy)": ([Line(g, 5) for g in wide], many, wide),
        "100 lines, 10 locations (exact, worst)": ([Line(g, 5) for g in narrow], many[:10], narrow),
    }


def measure(rounds: int) -> dict[str, list[float]]:
    """Each case's CPU seconds per round; every allocation must fill every line."""
    spent: dict[str, list[float]] = {}
    for name, (wanted, where, levels) in cases().items():
        for _ in range(rounds):
            start = time.process_time()
            decision = allocate(wanted, where, levels)
            spent.setdefault(name, []).append(time.process_time() - start)
            if decision.shortfalls:
                raise SystemExit(f"{name}: the allocation left lines short: {decision.shortfalls}")
    return spent


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    for name, seconds in measure(args.rounds).items():
        median, worst = statistics.median(seconds) * 1000, max(seconds) * 1000
        print(f"{name}: CPU median {median:.1f} ms, worst {worst:.1f} ms ({args.rounds} rounds)")


if __name__ == "__main__":
    main()
