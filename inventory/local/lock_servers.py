"""The servers a stack's locks and flags need, each a step of `up` (stack.py): started in the
stack's home unless the environment points at one (ZK_HOSTS, REDIS_URL, ETCD_ENDPOINTS,
REDLOCK_URLS), and only when the lock backend uses it. Each returns the address the services
are given, and records what it started in `started`, so `up` can stop it on the way out."""

from __future__ import annotations

from pathlib import Path

from inventory.local import servers
from inventory.local.etcd_server import start_etcd
from shared.config.settings import Settings

REDLOCK_SERVERS = 3  # started by `up` for LOCK_BACKEND=redlock when REDLOCK_URLS is not set


def zookeeper_unless_given(env: dict[str, str], home: Path, started: dict[str, int]) -> str:
    if env.get("ZK_HOSTS"):
        return env["ZK_HOSTS"]
    zk = servers.start_zookeeper(home / "zookeeper")
    started["zookeeper"] = zk.pid
    return zk.address


def redis_unless_given(env: dict[str, str], home: Path, started: dict[str, int]) -> str:
    if env.get("REDIS_URL"):
        return env["REDIS_URL"]
    # Persistent: the stream of stock events lives here, and a restarted stack (`down`, `up`)
    # must still have what the relay marked sent (the flags in it do no harm: each has a TTL).
    rd = servers.start_redis(home / "redis", persist=True)
    started["redis"] = rd.pid
    return f"redis://{rd.address}/0"


def etcd_if_the_lock_needs_it(
    settings: Settings, env: dict[str, str], home: Path, started: dict[str, int]
) -> str:
    if settings.lock_backend != "etcd":
        return ""
    if env.get("ETCD_ENDPOINTS"):
        return env["ETCD_ENDPOINTS"]
    etcd = start_etcd(home / "etcd")
    started["etcd"] = etcd.pid
    return f"http://{etcd.address}"


def redlock_servers_if_the_lock_needs_them(
    settings: Settings, env: dict[str, str], home: Path, started: dict[str, int]
) -> str:
    if settings.lock_backend != "redlock":
        return ""
    if env.get("REDLOCK_URLS"):
        return env["REDLOCK_URLS"]
    nodes = []  # three independent servers, none of them the flag Redis
    for i in range(REDLOCK_SERVERS):
        node = servers.start_redis(home / f"redlock{i}")
        started[f"redlock{i}"] = node.pid
        nodes.append(f"redis://{node.address}/0")
    return ",".join(nodes)
