"""The latency bench's arithmetic (inventory/cluster/latency_report.py): where the flow/peer
ratio crosses 1, which load counts as a side's saturated rate, and the round trips a hold
waits for read off its growth with the added latency."""

from __future__ import annotations

from typing import Any

import pytest

from inventory.cluster.latency_report import crossover, round_trips, saturated


def test_crossover_interpolates_where_the_ratio_passes_one() -> None:
    assert crossover([(0.0, 0.5), (1.0, 1.5)]) == pytest.approx(0.5)
    assert crossover([(16, 0.8), (64, 0.9), (128, 1.3)]) == pytest.approx(64 + 0.1 / 0.4 * 64)
    assert crossover([(0.0, 0.5), (1.0, 0.7)]) is None


def _row(delay: float, callers: int, rate: float, peer_rate: float, **parts: Any) -> dict[str, Any]:
    return {
        "delay_ms": delay,
        "goods": 1,
        "callers": callers,
        "flow": {"per_second": rate, "errors": 0, "answers": 400, **parts.get("flow", {})},
        "peer": {
            "per_second": peer_rate,
            "errors": parts.get("peer_errors", 0),
            "answers": 400,
            **parts.get("peer", {}),
        },
        "ratio": rate / peer_rate,
    }


def test_a_load_with_errors_is_not_a_sides_saturated_rate() -> None:
    report = {
        "summary": [
            _row(0.5, 16, 40, 60),
            _row(0.5, 64, 90, 55),
            _row(0.5, 128, 120, 80, peer_errors=100),  # the peer's replicas marked down
        ]
    }
    [best] = saturated(report)
    assert best["flow"]["per_second"] == 120 and best["flow"]["callers"] == 128
    assert best["peer"]["per_second"] == 60 and best["peer"]["callers"] == 16
    assert best["ratio"] == pytest.approx(2.0)


def test_round_trips_per_hold_is_the_holds_slope_against_the_added_round_trip() -> None:
    report = {
        "proxy": [
            {"delay_ms": 0.0, "added_rtt_ms": {"p50": 0.0}},
            {"delay_ms": 1.0, "added_rtt_ms": {"p50": 2.0}},
        ],
        "alone": [
            _row(0.0, 1, 40, 60, flow={"lock_hold_ms": 20.0}, peer={"row_hold_ms": 8.0}),
            _row(1.0, 1, 30, 40, flow={"lock_hold_ms": 48.0}, peer={"row_hold_ms": 16.0}),
        ],
    }
    fits = round_trips(report)
    assert fits["flow"]["round_trips_per_hold"] == pytest.approx(14.0)
    assert fits["peer"]["round_trips_per_hold"] == pytest.approx(4.0)
    assert fits["peer"]["hold_ms_without_added"] == pytest.approx(8.0)
