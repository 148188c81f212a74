"""The nemesis's `restart-all-redis`: declared with its heal, and what it does to the cluster's
programs: every Redis node (and nothing else) killed before the first is waited for, each
started again at the heal. Stand-in processes (`sleep`) play the hosts' programs; the
cluster's own servers are the chaos run's business (tests/e2e/test_chaos.py)."""

from __future__ import annotations

import random
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
    assert fault.heal is ha_faults.heal_redis  # restarts what was killed, waits until whole
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
        healed = ha_faults.heal_redis(state)
        assert sorted(started) == ["redis1", "redis2"]
        assert "Redis replicated again" in healed and "no takeover" in healed
    finally:
        for proc in procs.values():
            if proc.alive():
                proc.kill()
        ha_faults.forget()
