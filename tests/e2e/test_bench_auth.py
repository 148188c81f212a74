"""`inventory bench --auth`'s TLS rows and its failover, each on servers of its own, at tiny sizes
so they never rot: ZooKeeper plain vs TLS, Redis's TLS rows with redis-py's SSL context per
connection against the shared one, and a Sentinel failover timed with two threads. Figures are
not asserted beyond being there and in order (speed belongs to the bench, not to timed tests on
a shared machine); everything started is stopped."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from rich.console import Console

from inventory.bench.auth_failover import SHARED, time_failover
from inventory.bench.auth_redis_tls import redis_tls_pairs
from inventory.bench.auth_sentinels import own_sentinels
from inventory.bench.auth_show import cpu_table, failover_table
from inventory.bench.auth_zk_tls import zookeeper_tls_pairs
from inventory.cluster import tls

pytestmark = pytest.mark.e2e


def running_in(folder: Path) -> list[int]:
    """Processes whose working directory is under `folder` (the servers are started there;
    redis-server renames its command line, so the folder is the way to find them)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and os.readlink(f"/proc/{entry}/cwd").startswith(str(folder)):
                found.append(int(entry))
        except OSError:
            continue
    return found


def test_zookeeper_and_redis_tls_rows(tmp_path: Path) -> None:
    pairs = zookeeper_tls_pairs(tmp_path / "zk", seconds=0.1, warm_up=0)
    pairs += redis_tls_pairs(tmp_path / "redis", seconds=0.1)
    assert [(p.part, p.what.split(" (")[0].split(":")[0]) for p in pairs] == [
        ("ZooKeeper TLS", "session opened and closed"),
        ("ZooKeeper TLS", "lock node created and deleted on a kept session"),
        ("Redis TLS", "connection opened, PING, closed"),
        ("Redis TLS", "flag SET + DEL on a kept connection"),
        ("Redis TLS", "TLS connection opened, PING, closed"),
    ]
    for p in pairs:
        assert p.open_rate > 0 and p.auth_rate > 0, p
        assert p.open_cpu_us is not None and p.open_cpu_us > 0, p
        assert p.auth_cpu_us is not None and p.auth_cpu_us > 0, p
    out = io.StringIO()
    Console(file=out, width=80).print(cpu_table(pairs))
    assert "ZooKeeper TLS" in out.getvalue() and "shared/redis_tls.py" in out.getvalue()
    assert running_in(tmp_path) == []


def test_a_sentinel_failover_is_timed_and_its_servers_stopped(tmp_path: Path) -> None:
    tls.make_server(tmp_path, tls.REDIS_STEM, ["127.0.0.1"])
    with own_sentinels(tmp_path / "servers", str(tmp_path / tls.FOLDER / tls.CA)) as setup:
        result = time_failover(setup, shared=True, threads=2)
    assert running_in(tmp_path) == []
    assert (result.context, result.threads) == (SHARED, 2)
    assert result.connections >= 1
    # The sentinels switch (not before down-after, 1 s), the first thread is back, then both.
    # (Whether the watcher notes the switch before a thread is back is up to the GIL.)
    assert result.promoted_s is not None and result.first_s is not None
    assert result.all_s is not None
    assert 1 < result.promoted_s < 60 and 1 < result.first_s <= result.all_s < 60
    assert result.cpu_ms is not None and result.burst_cpu_ms is not None
    assert result.cpu_ms > 0 and result.burst_cpu_ms <= result.cpu_ms
    assert result.first_command_cpu_ms is not None and result.first_command_cpu_ms > 0
    out = io.StringIO()
    Console(file=out, width=80).print(failover_table([result]))
    assert "every thread's command succeeds again" in out.getvalue()
