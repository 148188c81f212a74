"""The whole stack as a user runs it: `inventory up` (gunicorn processes of both services with
several workers, our own ZooKeeper and Redis, SQLite), real HTTP, then `inventory down`."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from inventory import stack
from inventory.servers import pid_alive

pytestmark = pytest.mark.e2e


def run_cli(home: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "INVENTORY_HOME": str(home)}
    for var in ("ZK_HOSTS", "REDIS_URL", "ORDER_DATABASE_URL", "STOCK_DATABASE_URL"):
        env.pop(var, None)
    return subprocess.run(
        [sys.executable, "-m", "inventory.cli", *args],
        env=env,
        text=True,
        capture_output=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="module")
def running_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[stack.StackState]:
    home = tmp_path_factory.mktemp("stack")
    up = run_cli(home, "up")
    assert up.returncode == 0, up.stdout + up.stderr
    state = stack.load_state(home)
    assert state is not None
    yield state
    down = run_cli(home, "down")
    assert down.returncode == 0, down.stdout + down.stderr
    assert not any(pid_alive(pid) for pid in state.pids.values())


async def place_orders(url: str, goods: str, count: int) -> tuple[Counter[int], float]:
    limits = httpx.Limits(max_connections=count)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        started = time.perf_counter()
        responses = await asyncio.gather(
            *(
                client.post("/genOrder", json={"userId": f"buyer-{i}", "goodsIds": [goods]})
                for i in range(count)
            )
        )
        elapsed = time.perf_counter() - started
    return Counter(r.status_code for r in responses), elapsed


def test_two_hundred_buyers_of_forty_units_over_gunicorn(running_stack: stack.StackState) -> None:
    state = running_stack
    assert len(state.pids) == 4  # zookeeper, redis, and one gunicorn master per service
    httpx.put(f"{state.stock_url}/stock/e2e-phone", json={"num": 40}).raise_for_status()

    statuses, elapsed = asyncio.run(place_orders(state.order_url, "e2e-phone", 200))
    print(f"\n200 orders in {elapsed:.2f}s = {200 / elapsed:.0f} orders/s: {dict(statuses)}")

    assert statuses == {200: 40, 409: 160}
    assert httpx.get(f"{state.stock_url}/stock/e2e-phone").json()["num"] == 0


def test_status_reports_the_running_stack_as_json(running_stack: stack.StackState) -> None:
    result = run_cli(Path(running_stack.home), "status", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["order_url"] == running_stack.order_url
    assert all(data["running"].values())


def test_demo_tells_the_story_of_one_order(running_stack: stack.StackState) -> None:
    result = run_cli(Path(running_stack.home), "demo")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "the story holds" in result.stdout
    assert "SET " in result.stdout and "DEL " in result.stdout  # the flag, seen by MONITOR
    assert "__lock__" in result.stdout  # the ephemeral sequential lock node
