"""The saturation sweep's arithmetic (inventory/bench/saturation.py): each side's best rate
among the loads that count, the ratio at saturation beside the first count's, and the lock's
idle time per hold."""

from __future__ import annotations

from inventory.bench.batches import Histogram
from inventory.bench.saturation import PEER, Cell, Cells, report


def cell(rate: float, errors: int = 0, requests: int = 1000) -> Cell:
    return Cell(rates=[rate], latencies=[0.01, 0.02], requests=requests, errors=errors)


def test_the_idle_time_per_hold_is_the_wall_less_the_holds_over_the_holds() -> None:
    c = cell(100)
    c.wall = 2.0  # seconds of load
    c.holds = Histogram(sum=1000, count=100)  # 100 holds of 10 requests
    c.hold_time = Histogram(sum=1.2, count=100)  # 12 ms each
    assert c.gap_ms() == 8.0
    assert cell(100).gap_ms() is None  # no holds seen (the peer): no figure


def test_saturation_is_the_best_load_that_counts_and_its_ratio_is_beside_the_first() -> None:
    cells: Cells = {
        ("flow", "genOrder", 16): cell(100),
        ("flow", "genOrder", 64): cell(300),
        ("flow", "genOrder", 256): cell(900, errors=11),  # past 1% errors: does not count
        (PEER, "genOrder", 16): cell(200),
        (PEER, "genOrder", 64): cell(150),
        (PEER, "genOrder", 256): cell(120),
    }
    lines: list[str] = []
    report(cells, (16, 64, 256), say=lines.append)
    [verdict] = [line for line in lines if line.startswith("flow:")]
    assert "saturated 300/s at 64 callers" in verdict
    assert "peer 200/s at 16" in verdict
    assert "flow / peer 1.50 at saturation, 0.50 at 16 callers" in verdict
