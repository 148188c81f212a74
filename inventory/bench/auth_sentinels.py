"""The servers of `inventory bench --auth`'s failover measurement (auth_failover.py), the bench's
own on loopback ports nobody listens on: a Redis primary and its replica, TLS only, and three
sentinels, TLS only, monitoring them with the cluster's settings (inventory/cluster/redis_ha.py:
down-after 1 s, failover-timeout 10 s, quorum 2, one replica resynchronised at a time). No ACL
users or passwords: the cluster's AUTH adds a round trip per connection (the Redis ACL rows),
not a handshake, and what is timed here is the reconnection with TLS."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import redis

from inventory.cluster import tls
from inventory.cluster.redis_ha import DOWN_AFTER_MS, FAILOVER_TIMEOUT_MS
from inventory.local.servers import ServerProcess, free_port, start_server, wait_until

MASTER = "bench"  # the name the sentinels monitor the primary by
QUORUM = 2


@dataclass
class Sentinels:
    ca: str
    primary: ServerProcess
    replica: ServerProcess
    sentinels: list[ServerProcess]

    @property
    def url(self) -> str:
        """REDIS_URL as the cluster's services are given it (shared/redis_client.py)."""
        hosts = ",".join(s.address for s in self.sentinels)
        return f"rediss+sentinel://{hosts}/{MASTER}?ssl_ca_certs={self.ca}"

    def client(self, port: int) -> redis.Redis:
        return tls_client(self.ca, port)


def tls_client(ca: str, port: int) -> redis.Redis:
    """A client of one of these servers (or sentinels), the server checked against the CA."""
    return redis.Redis(
        host="127.0.0.1",
        port=port,
        socket_timeout=2,
        socket_connect_timeout=2,
        decode_responses=True,
        **tls.redis_client_kwargs(ca),  # type: ignore[arg-type]
    )


def _answers(client: redis.Redis, check: str = "") -> bool:
    """PING answered (and `check` in the replication INFO, when given)."""
    try:
        return bool(client.ping()) and (
            not check or client.info("replication").get("master_link_status") == check
        )
    except redis.RedisError:
        return False


def _start(name: str, folder: Path, port: int, lines: str, ready: redis.Redis) -> ServerProcess:
    """One redis-server or redis-sentinel with its own folder and config (a sentinel rewrites
    its file as it learns the others and after a failover), ready when it answers over TLS."""
    home = folder / name
    home.mkdir(parents=True, exist_ok=True)
    config = home / f"{name}.conf"
    config.write_text(f"bind 127.0.0.1\ndir {home}\n{lines}")
    program = "redis-sentinel" if name.startswith("sentinel") else "redis-server"
    try:
        return start_server(name, [program, str(config)], port, home, lambda: _answers(ready), 20)
    finally:
        ready.close()


@contextlib.contextmanager
def own_sentinels(folder: Path, ca: str) -> Iterator[Sentinels]:
    """Primary, replica (linked), three sentinels that know the replica and each other; every
    process stopped on the way out, whatever happened. `ca`: tls.make_server's CA, with the
    Redis certificate (tls.REDIS_STEM) for 127.0.0.1 beside it."""
    started: list[ServerProcess] = []
    # No disk; and the replica's first sync at once (Redis waits 5 s by default for more
    # replicas to share a diskless transfer: the bench has one, and nothing to wait for).
    server = 'save ""\nappendonly no\nrepl-diskless-sync-delay 0\n'
    try:
        ports = [free_port() for _ in range(5)]
        started.append(
            _start(
                "redis-primary",
                folder,
                ports[0],
                server + tls.redis_server_lines(ca, ports[0]),
                tls_client(ca, ports[0]),
            )
        )
        started.append(
            _start(
                "redis-replica",
                folder,
                ports[1],
                server + tls.redis_server_lines(ca, ports[1]) + f"replicaof 127.0.0.1 {ports[0]}\n",
                tls_client(ca, ports[1]),
            )
        )
        replica = tls_client(ca, ports[1])
        try:
            wait_until(lambda: _answers(replica, "up"), 20, "the bench's Redis replica linked")
        finally:
            replica.close()
        # Started once the replica is linked: a sentinel learns the replicas from the primary's
        # INFO, asked at once and then every 10 s.
        for i, port in enumerate(ports[2:], 1):
            lines = tls.redis_server_lines(ca, port) + (
                f"sentinel monitor {MASTER} 127.0.0.1 {ports[0]} {QUORUM}\n"
                f"sentinel down-after-milliseconds {MASTER} {DOWN_AFTER_MS}\n"
                f"sentinel failover-timeout {MASTER} {FAILOVER_TIMEOUT_MS}\n"
                f"sentinel parallel-syncs {MASTER} 1\n"
            )
            started.append(_start(f"sentinel-{i}", folder, port, lines, tls_client(ca, port)))
        ready = Sentinels(ca, started[0], started[1], started[2:])
        for sentinel in ready.sentinels:
            # They find each other through the primary's hello channel (every 2 s): a quorum of
            # 2 needs each to know the others before the primary dies.
            wait_until(
                partial(_knows_all, ca, sentinel.port),
                30,
                f"sentinel on port {sentinel.port} knowing the replica and the other sentinels",
            )
        yield ready
    finally:
        for process in reversed(started):
            process.stop()


def _knows_all(ca: str, port: int) -> bool:
    client = tls_client(ca, port)
    try:
        state: Any = client.sentinel_master(MASTER)
        return bool(state["num-slaves"] >= 1 and state["num-other-sentinels"] >= 2)
    except (redis.RedisError, KeyError):
        return False
    finally:
        client.close()
