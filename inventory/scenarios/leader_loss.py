"""The ZooKeeper leader killed under load: a 3-node ensemble, a load test, the unavailable
window measured, the invariants checked."""

from __future__ import annotations

import itertools
import os
import signal
import threading
import time
from pathlib import Path

from rich.console import Console

from inventory.check import print_results, run_check
from inventory.local.ensemble import start_zookeeper_ensemble, zk_mode
from inventory.local.homes import temporary_home
from inventory.scenarios.rig import ScenarioResult, Story, scenario_stack

# --- 7. zk-leader-loss ---------------------------------------------------------------------


def zk_leader_loss(
    console: Console | None = None, orders: int = 600, kill_after: float = 1.5
) -> ScenarioResult:
    story = Story(console)
    with temporary_home("zk-ensemble") as home:
        return _zk_leader_loss(story, home, orders, kill_after)


def _zk_leader_loss(story: Story, home: Path, orders: int, kill_after: float) -> ScenarioResult:
    import asyncio

    from inventory.loadtest import LoadConfig, drive

    ensemble = start_zookeeper_ensemble(home)
    try:
        hosts = ",".join(s.address for s in ensemble)
        story.step(
            f"A 3-node ZooKeeper ensemble on {hosts}: modes {[zk_mode(s.port) for s in ensemble]}"
        )
        env = {
            "ZK_HOSTS": hosts,
            "ZK_SESSION_TIMEOUT": "10",
            "LOCK_TIMEOUT": "15",
            "STOCK_CALL_TIMEOUT": "15",
            "STOCK_CALL_RETRIES": "5",
            "RETRY_BACKOFF": "0.5",
        }
        with scenario_stack("zk-leader-loss", env) as state:
            leader = next(s for s in ensemble if zk_mode(s.port) == "leader")
            killed_at: list[float] = []

            def kill_leader() -> None:
                time.sleep(kill_after)
                killed_at.append(time.perf_counter())
                os.kill(leader.pid, signal.SIGKILL)  # a crash, not a shutdown

            story.step(
                f"A load test of {orders} orders; the leader ({leader.name}, "
                f"{leader.address}) is killed {kill_after} s in."
            )
            config = LoadConfig(orders=orders, concurrency=16, goods=4, stock=10_000, seed=3)
            killer = threading.Thread(target=kill_leader)
            started = time.perf_counter()
            killer.start()
            result = asyncio.run(drive(state, config, None))
            killer.join()
            kill_time = killed_at[0] - started
            survivors = [s for s in ensemble if s is not leader]
            story.show(
                f"leader killed at t={kill_time:.2f} s; modes now "
                f"{[zk_mode(s.port) for s in survivors]}"
            )
            done = sorted(a.finished for a in result.primary if a.outcome == "confirmed")
            gaps = [(b - a, a) for a, b in itertools.pairwise(done) if b > kill_time - 0.5]
            window, window_start = max(gaps) if gaps else (0.0, 0.0)
            summary = result.summary()
            story.step(
                f"{summary['confirmed']} confirmed, {summary['failed']} failed, errors "
                f"{summary['errors'] or 0}, in {summary['elapsed_s']} s"
            )
            story.show(
                f"unavailable window: no order completed for {window:.2f} s, from "
                f"t={window_start:.2f} s (the kill was at t={kill_time:.2f} s)"
            )
            checks = run_check(
                state.order_database_url, state.stock_database_url, goods_prefix=result.prefix
            )
            if story.console:
                print_results(checks, story.console)
    finally:
        for server in ensemble:
            server.stop()
    ok = all(c.ok for c in checks) and not summary["errors"]
    return ScenarioResult(
        "zk-leader-loss",
        ok,
        f"zero violations; unavailable for {window:.2f} s" if ok else "FAILED",
        checks,
        {
            "window_s": round(window, 3),
            "kill_at_s": round(kill_time, 2),
            "confirmed": summary["confirmed"],
            "failed": summary["failed"],
        },
    )
