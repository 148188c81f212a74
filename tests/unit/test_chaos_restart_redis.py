"""The nemesis's `restart-all-redis`: declared with its heal, and what it does to the cluster's
programs: every Redis node (and nothing else) killed before the first is waited for, each
started again at the heal. Stand-in processes (`sleep`) play the hosts' programs; the
cluster's own servers are the chaos run's business (tests/e2e/test_chaos.py)."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from inventory.chaos import ha_faults, nemesis
from inventory.cluster import redis_ha, topology
from inventory.cluster.deploy import ClusterState
from inventory.cluster.nodes import Proc
from inventory.local.servers import spawn


def test_it_is_declared_with_the_heal_that_waits_for_redis_replicated() -> None:
    fault = nemesis.FAULTS["restart-all-redis"]
    assert fault.inject is ha_faults.restart_all_redis
    # restarts what was killed, waits until whole and until the sentinels may fail over again
    assert fault.heal is ha_faults.heal_all_redis
    assert 0 < fault.hold <= 10
    assert not fault.stock_settings and fault.demand is None
    assert "restart-all-redis" not in nemesis.QUICK  # a full run's, as the other HA faults


class NoSecrets(ClusterState):
    @property
    def secrets(self) -> object:  # type: ignore[override]
        return object()


def test_every_redis_node_is_killed_and_only_those_and_started_again_at_the_heal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hosts = ["redis1", "redis2", "stock1", "zk1"]
    procs = {}
    for name in hosts:
        proc = Proc(name, name, ["sleep", "60"], str(tmp_path / f"{name}.log"))
        proc.pid = spawn(proc.argv, Path(proc.log), tmp_path)
        procs[name] = proc
    state = NoSecrets(str(tmp_path), procs)
    monkeypatch.setattr(redis_ha, "primary", lambda secrets: topology.host("redis2"))
    try:
        said = ha_faults.restart_all_redis(state, random.Random(1))
        assert "redis1, redis2" in said and "the primary was redis2" in said
        assert [n for n, p in procs.items() if not p.alive()] == ["redis1", "redis2"]
        started: list[str] = []
        monkeypatch.setattr(Proc, "start", lambda self, home: started.append(self.name))
        monkeypatch.setattr(redis_ha, "replicated", lambda secrets: True)
        healed = ha_faults.heal_all_redis(state)
        assert sorted(started) == ["redis1", "redis2"]
        assert "Redis replicated again" in healed and "no takeover" in healed
        assert "the sentinels tried no failover" in healed  # no sentinel here, no log
    finally:
        for proc in procs.values():
            if proc.alive():
                proc.kill()
        ha_faults.forget()


DELAY = "Next failover delay: I will not start a failover before"
SENTINEL_LOG = (
    "32522:X 28 Nov 2026 07:27:00.279 # +failover-state-select-slave master inventory\n"
    "32522:X 28 Nov 2026 07:27:00.332 # -failover-abort-no-good-slave master inventory\n"
    f"32522:X 28 Nov 2026 07:27:00.404 # {DELAY} Sat Nov 28 07:27:21 2026\n"
)
OTHER_LOG = f"32515:X 28 Nov 2026 07:27:00.317 # {DELAY} Sat Nov 28 07:27:20 2026\n"


def test_the_latest_failover_delay_the_sentinels_logged_is_found() -> None:
    until = ha_faults.failover_blocked_until({Path("a"): SENTINEL_LOG, Path("b"): OTHER_LOG})
    assert until is not None
    assert time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(until)) == "2026-11-28 07:27:21"
    assert ha_faults.failover_blocked_until({Path("a"): "+sdown master inventory\n"}) is None


def test_the_heal_waits_until_the_sentinels_may_fail_over_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "sentinel.log"
    log.write_text(
        "old lines, before the fault: I will not start a failover before Sat Nov 28 07:27:21 2026\n"
    )
    state = NoSecrets(str(tmp_path), {"s-zk1": Proc("s-zk1", "zk1", ["true"], str(log))})
    monkeypatch.setattr(redis_ha, "primary", lambda secrets: None)
    monkeypatch.setattr(ha_faults, "_kill_host", lambda state, name: None)
    ha_faults.restart_all_redis(state, random.Random(1))
    soon = time.strftime("%a %b %d %H:%M:%S %Y", time.localtime(time.time() + 2))
    with open(log, "a") as f:
        f.write(f"# Next failover delay: I will not start a failover before {soon}\n")
    monkeypatch.setattr(ha_faults, "heal_redis", lambda state: "Redis replicated again")
    started = time.monotonic()
    said = ha_faults.heal_all_redis(state)
    assert time.monotonic() - started >= 1.5
    assert "until the sentinels may fail over again" in said
