"""The benchmark in smoke mode (tiny sizes), so it never rots. Figures are not asserted:
speed targets belong to `inventory bench`, not to timed tests on a shared machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from inventory.bench import BenchConfig, run_bench, write_report
from inventory.servers import ServerProcess

pytestmark = pytest.mark.e2e


def test_bench_smoke_measures_every_configuration(
    tmp_path: Path, zk_server: ServerProcess, redis_server: ServerProcess
) -> None:
    env = {"ZK_HOSTS": zk_server.address, "REDIS_URL": f"redis://{redis_server.address}/0"}
    report = run_bench(BenchConfig.smoke(), env, say=lambda *_: None)
    names = [m.name for m in report.limits + report.reduce + report.gen_order]
    assert names[:3] == ["kazoo lock cycle", "redis-py lock cycle", "hot-row update+commit"]
    assert "reduceStock zookeeper/sku 1 goods" in names
    assert "reduceStock zookeeper/global 100 goods" in names
    assert "reduceStock none/sku 100 goods" in names
    assert all(m.per_second > 0 for m in report.limits + report.reduce + report.gen_order)
    assert all(m.errors == 0 for m in report.reduce + report.gen_order)
    assert {"lock", "deduct", "release"} <= set(
        report.find("reduceStock zookeeper/sku 1 goods").stages_ms
    )  # type: ignore[union-attr]
    assert set(report.ratios()) == {
        "zookeeper hot goods / raw kazoo lock cycle",
        "zookeeper: 100 goods sku / global",
    }
    data, chart = write_report(report, tmp_path)
    assert '"ratios"' in data.read_text() and chart.read_bytes()[:4] == b"\x89PNG"
