"""The benchmark in smoke mode (tiny sizes), so it never rots. Figures are not asserted:
speed targets belong to `inventory bench`, not to timed tests on a shared machine."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from inventory.bench import BenchConfig, BenchReport, run_bench, write_report
from inventory.local.servers import ServerProcess

pytestmark = pytest.mark.e2e


def test_bench_smoke_measures_every_configuration(
    tmp_path: Path, zk_server: ServerProcess, redis_server: ServerProcess
) -> None:
    env = {"ZK_HOSTS": zk_server.address, "REDIS_URL": f"redis://{redis_server.address}/0"}
    folders_before = set(Path(tempfile.gettempdir()).glob("inventory-bench-*"))
    report = run_bench(BenchConfig.smoke(), env, say=lambda *_: None)
    assert [m.name for m in report.limits] == [
        "kazoo lock cycle",
        "kazoo lock cycle (polling handler)",
        "redis-py lock cycle",
        "hot-row update+commit",
    ]
    configs = {(m.config, m.goods) for m in report.reduce}
    for config in (
        "zookeeper/sku combining",
        "zookeeper/sku combining outbox off",
        "zookeeper/sku one at a time",
        "zookeeper/global combining",
        "zookeeper/global one at a time",
        "none",
    ):
        assert {(config, 1), (config, 5)} <= configs
    measures = report.limits + report.reduce + report.gen_order + report.peer
    assert all(m.per_second > 0 for m in measures)
    assert all(m.errors == 0 for m in report.reduce + report.gen_order + report.peer)
    hot = report.reduce_of("zookeeper/sku combining", 1)
    assert hot is not None and hot.batch_mean is not None and hot.batch_mean >= 1
    assert {"prefilter", "queue", "lock", "deduct"} <= set(hot.stages_ms)
    one_at_a_time = report.reduce_of("zookeeper/sku one at a time", 1)
    assert one_at_a_time is not None and one_at_a_time.batch_p99 == 1
    # The order path next to the deduction, on the same stack: one hot goods id and the spread;
    # and on that stack with the outbox off (STOCK_EVENTS=false).
    assert [(m.config, m.goods) for m in report.gen_order] == [
        ("zookeeper/sku combining", 1),
        ("zookeeper/sku combining", 5),
        ("zookeeper/sku combining outbox off", 1),
        ("zookeeper/sku combining outbox off", 5),
    ]
    for order in report.gen_order:
        assert {"order_service", "stock_service", "load"} <= set(order.cpu_ms)
        # the client's CPU measured apart and left out of the stack's (it can round to 0 ms in
        # a smoke run's few requests on a loaded machine: not "<" the sum, then, but without it)
        client = order.cpu_ms["load"]
        assert 0 < order.stack_cpu_ms == pytest.approx(sum(order.cpu_ms.values()) - client)
    # The one-database peer beside it: the same loads, its own gunicorn's CPU.
    assert [(m.config, m.goods) for m in report.peer] == [
        ("one-database peer", 1),
        ("one-database peer", 5),
    ]
    for peer in report.peer:
        assert {"peer", "load"} == set(peer.cpu_ms)
        client = peer.cpu_ms["load"]
        assert 0 <= peer.stack_cpu_ms == pytest.approx(sum(peer.cpu_ms.values()) - client)
    # /proc counts CPU in clock ticks (10 ms): a smoke run's short load beside a busy cluster
    # once read 0 ticks for the peer's 5-goods turn (993 orders/s); both turns reading none
    # would mean the peer's processes are not being measured at all.
    assert any(peer.stack_cpu_ms > 0 for peer in report.peer), report.peer
    assert {t.name for t in report.targets()} == {
        "zookeeper hot goods / no lock",
        "zookeeper hot goods / raw kazoo lock cycle",
        "zookeeper 5 goods / no lock",
        "zookeeper hot goods p99: combining / one at a time",
        "genOrder / reduceStock, hot goods",
        "genOrder / one-database peer, hot goods",
        "genOrder / one-database peer, 5 goods",
        "genOrder stack CPU ms per order, hot goods and 5 goods",
        "genOrder p99 ms at 4 callers, hot goods and 5 goods",
    }
    # What the outbox costs: each load with it and without, side by side, with the ratios.
    assert [load for load, _, _ in report.outbox_pairs()] == [
        "reduceStock, 1 goods",
        "reduceStock, 5 goods",
        "genOrder, 1 goods",
        "genOrder, 5 goods",
    ]
    assert "outbox on / off, genOrder, 1 goods: stack CPU per request" in report.ratios()
    data, chart = write_report(report, tmp_path)
    written = json.loads(data.read_text())
    assert set(written["ratios"]) >= {t.name for t in report.targets()}
    assert chart.read_bytes()[:4] == b"\x89PNG"
    assert BenchReport.from_json(data).peer == report.peer
    # Everything it started is stopped, and its folder is gone.
    assert set(Path(tempfile.gettempdir()).glob("inventory-bench-*")) == folders_before
