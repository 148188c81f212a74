"""/metrics under gunicorn with several workers (prometheus_client's multiprocess mode): after a
load test the counters add up over the workers to exactly what the load did."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from inventory.loadtest import LoadConfig, run_loadtest
from inventory.local import stack
from inventory.local.servers import ServerProcess

pytestmark = pytest.mark.e2e


def total(text: str, name: str, **labels: str) -> float:
    """The sum of a metric's samples whose labels include `labels`."""
    found = 0.0
    for line in text.splitlines():
        match = re.match(rf"{name}(\{{[^}}]*\}})? (\S+)$", line)
        if match and all(f'{k}="{v}"' in (match[1] or "") for k, v in labels.items()):
            found += float(match[2])
    return found


def test_the_counters_of_all_workers_add_up_to_the_load(
    tmp_path: Path, zk_server: ServerProcess, redis_server: ServerProcess
) -> None:
    env = {"ZK_HOSTS": zk_server.address, "REDIS_URL": f"redis://{redis_server.address}/0"}
    state = stack.up(home=tmp_path, workers=2, extra_env=env, say=lambda *_: None)
    try:
        config = LoadConfig(orders=80, concurrency=16, goods=2, stock=20, seed=5)
        result = run_loadtest(state, config)
        summary = result.summary()
        order = httpx.get(f"{state.order_url}/metrics").text
        stock = httpx.get(f"{state.stock_url}/metrics").text
    finally:
        stack.down(home=tmp_path, say=lambda *_: None)
    assert summary["confirmed"] == 40
    assert list((tmp_path / "metrics-stock_service").glob("*.db"))  # the workers' files
    assert total(order, "orders_total", status="CONFIRMED") == 40
    assert total(order, "orders_total", status="FAILED") == 40
    assert total(stock, "deductions_total", outcome="deducted") == 40
    assert total(stock, "lock_wait_seconds_count", backend="zookeeper") >= 1
    assert total(stock, "lock_hold_seconds_count", backend="zookeeper") == total(
        stock, "deduct_batch_size_count"
    )
    assert total(stock, "stock_level") == 0  # both goods ids sold out
