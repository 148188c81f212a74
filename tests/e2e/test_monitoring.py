"""`inventory up --monitoring`: Debian's prometheus scrapes both services; after a load test
every query of the Grafana dashboard (deploy/grafana) runs on it, and those of the load have
data. The scrape configuration of deploy/ is the one `up` writes, but for the targets."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from inventory.loadtest import LoadConfig, run_loadtest
from inventory.local import stack
from inventory.local.monitoring import DEPLOY_CONFIG, compose_targets, scrape_config, static_targets
from inventory.local.servers import ServerProcess

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "inventory-dashboard.json"
# Queries of what the load does; the rest (fencing refusals, lock losses, retries) are zero or
# empty on a healthy stack, and must only run without error.
MUST_HAVE_DATA = ("orders_total", "deductions_total", "lock_wait_seconds", "deduct_batch_size")


def without_targets(config: str) -> dict[str, Any]:
    parsed = yaml.safe_load(config)
    for job in parsed["scrape_configs"]:
        job.pop("static_configs", None)
        job.pop("dns_sd_configs", None)
    return parsed


def test_deploy_scrapes_like_up_monitoring_but_for_the_targets() -> None:
    assert DEPLOY_CONFIG.read_text() == scrape_config(compose_targets())
    local = scrape_config(static_targets("127.0.0.1:1", "127.0.0.1:2"))
    assert without_targets(local) == without_targets(DEPLOY_CONFIG.read_text())


def dashboard_queries() -> list[tuple[str, str]]:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [(panel["title"], target["expr"]) for panel in panels for target in panel["targets"]]


def query(prometheus: str, expr: str) -> dict[str, Any]:
    answer = httpx.get(f"{prometheus}/api/v1/query", params={"query": expr}, timeout=10)
    body: dict[str, Any] = answer.json()
    assert answer.status_code == 200 and body["status"] == "success", (expr, body)
    return body["data"]


def wait_for_scrapes(prometheus: str, after: float) -> None:
    """Until both jobs are up and each was scraped after `after`."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        targets = httpx.get(f"{prometheus}/api/v1/targets", timeout=5).json()["data"]
        active = targets["activeTargets"]
        fresh = [
            t
            for t in active
            if t["health"] == "up"
            and t["lastScrape"][:1] != "0"
            and _epoch(t["lastScrape"]) > after
        ]
        if {t["labels"]["job"] for t in fresh} == {"order_service", "stock_service"}:
            return
        time.sleep(1)
    raise AssertionError(f"prometheus did not scrape both services: {active}")


def _epoch(rfc3339: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp()


@pytest.mark.e2e
def test_up_monitoring_scrapes_both_services_and_every_dashboard_query_runs(
    tmp_path: Path, zk_server: ServerProcess, redis_server: ServerProcess
) -> None:
    env = {"ZK_HOSTS": zk_server.address, "REDIS_URL": f"redis://{redis_server.address}/0"}
    state = stack.up(home=tmp_path, workers=1, extra_env=env, monitoring=True, say=lambda *_: None)
    try:
        assert state.prometheus_url and "prometheus" in state.pids
        # Two loads, each followed by a scrape: a rate needs two samples that differ.
        for seed in (1, 2):
            load = LoadConfig(orders=120, concurrency=8, goods=2, stock=40, seed=seed)
            assert run_loadtest(state, load).summary()["confirmed"] == 80
            wait_for_scrapes(state.prometheus_url, after=time.time())
        answers = {expr: query(state.prometheus_url, expr) for _, expr in dashboard_queries()}
    finally:
        stack.down(home=tmp_path, say=lambda *_: None)
    assert len(answers) >= 10
    for expr, data in answers.items():
        if any(name in expr for name in MUST_HAVE_DATA):
            values = [float(r["value"][1]) for r in data["result"]]
            assert values and any(v > 0 for v in values), (expr, data)
    # The lock's histograms by backend, as the issue asks of /metrics after a load test.
    p99 = answers[
        "histogram_quantile(0.99, sum by (le, backend) (rate(lock_wait_seconds_bucket[1m])))"
    ]["result"]
    assert [r["metric"]["backend"] for r in p99] == ["zookeeper"]
