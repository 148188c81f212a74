"""The benchmark in smoke mode (tiny sizes), so it never rots. Figures are not asserted:
speed targets belong to `inventory bench`, not to timed tests on a shared machine."""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path

import pytest
from rich.console import Console

from inventory.bench import BenchConfig, BenchReport, print_report, run_bench, write_report
from inventory.bench.goals import member_costs
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
    for m in report.reduce:  # the lock's batches from the stock service's metrics
        assert m.requests_per_hold is not None and m.requests_per_hold >= 1, m
        assert m.orders_per_batch is None  # reduceStock places no orders
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
        # Both sides' batches, read from the services' metrics before and after the load.
        assert order.orders_per_batch is not None and order.orders_per_batch >= 1, order
        assert order.requests_per_hold is not None and order.requests_per_hold >= 1, order
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
    assert all(p.orders_per_batch is None and p.requests_per_hold is None for p in report.peer)
    # One caller on the hot goods id: batches of one on both sides, what a lone request costs.
    assert [(m.name, m.callers) for m in report.lone] == [
        ("reduceStock zookeeper/sku combining, 1 goods, 1 caller", 1),
        ("genOrder zookeeper/sku combining, 1 goods, 1 caller", 1),
    ]
    lone_reduce, lone_order = report.lone
    assert lone_reduce.errors == lone_order.errors == 0
    assert lone_reduce.requests_per_hold == 1.0
    assert lone_order.orders_per_batch == 1.0 and lone_order.requests_per_hold == 1.0
    assert {"order_service", "stock_service"} <= set(lone_order.cpu_ms)
    costs = {(c.service, c.load): c for c in member_costs(report)}
    assert set(costs) == {
        ("order_service", "genOrder, 1 goods"),
        ("stock_service", "genOrder, 1 goods"),
        ("stock_service", "reduceStock, 1 goods"),
        ("order_service", "genOrder, 5 goods"),
        ("stock_service", "genOrder, 5 goods"),
        ("stock_service", "reduceStock, 5 goods"),
    }
    assert costs[("order_service", "genOrder, 1 goods")].lone_batch == 1.0
    assert {t.name for t in report.targets()} == {
        "zookeeper hot goods / no lock",
        "zookeeper hot goods / raw kazoo lock cycle",
        "zookeeper 5 goods / no lock",
        "zookeeper hot goods p99: combining / one at a time",
        "genOrder / reduceStock, hot goods",  # SQLite's goal
        "genOrder / one-database peer, hot goods",
        "genOrder / one-database peer, 5 goods",
        "genOrder stack CPU per order / the peer's",
        "genOrder p99 ms at 4 callers, hot goods and 5 goods",
    }
    # Each goal the run missed says which measured part bounds it.
    assert all(t.bound for t in report.targets() if t.figures and not t.met)
    out = io.StringIO()
    print_report(report, Console(file=out, width=200))
    text = out.getvalue()
    assert "batches and CPU per request" in text and "what a member costs" in text
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
    assert BenchReport.from_json(data).lone == report.lone
    hot_order = next(m for m in written["gen_order"] if m["goods"] == 1)
    assert hot_order["orders_per_batch"] >= 1 and hot_order["requests_per_hold"] >= 1
    assert "member / lone CPU per request, order_service, genOrder, 1 goods" in written["ratios"]
    # Everything it started is stopped, and its folder is gone.
    assert set(Path(tempfile.gettempdir()).glob("inventory-bench-*")) == folders_before
