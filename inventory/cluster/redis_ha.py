"""Redis with no single copy: a primary and a replica, watched by three sentinels on other hosts
(the ZooKeeper hosts), and an ACL user for each kind of client.

The services find the primary through the sentinels (shared/redis_client.py, redis-py's
`Sentinel`). A failover takes the sentinels' `down-after` (DOWN_AFTER_MS, 1 s) and their vote:
about 2 s without a primary (3-4 s with the 2 s `down-after` used before). Replication is
asynchronous, so a flag written just before the primary's death may be missing on the
promoted replica: its deduction then finds the flag unknown to Redis and to the stock database
and answers `unknown_flag` (never `duplicate`), and the order
service writes the flag again and retries (docs/flow.md: a flag Redis lost).

ACL users (Redis 7; `default` is off, so a client without a password is refused everything):
- order: SET and DEL, on keys shaped like order ids (they start with 13 digits of Unix
  milliseconds, shared/ids.py); the order service writes and removes flags and nothing else;
- reconciler: SET on the same keys (an undecided order's flag written again before its
  deduction is retried);
- stock: reads and deletes flags, and keeps its own keys (`inventory:*`: Redis locks, their
  fence counter, fault switches) with the commands its lock scripts run;
- relay: XADD to the stock events' stream and WAIT for the replica, on that one key;
- events: a consumer of that stream in a consumer group (XREADGROUP, XACK, XGROUP CREATE and
  DESTROY), on that one key: what the chaos run's consumer logs in as;
- sentinel: what Redis's documentation lists for a sentinel (INFO, ROLE, REPLICAOF, CONFIG
  REWRITE, CLIENT KILL...); replica: PSYNC and REPLCONF; monitor: PING, INFO, ROLE (the
  operator's readiness checks).
No service user has a @dangerous command (FLUSHALL, CONFIG, KEYS, DEBUG...) or any key outside
its patterns.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import redis
from redis.sentinel import Sentinel

from inventory.cluster import tls, topology
from inventory.cluster.secrets import Secrets
from inventory.cluster.topology import Host

ORDER_KEYS = "~[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]*"
STOCK_KEYS = f"{ORDER_KEYS} ~inventory:*"
# The stock events' stream (STOCK_EVENTS_STREAM's default): the relay's and its readers' only key.
EVENTS_KEY = f"~{topology.EVENTS_STREAM}"
PERMISSIONS = {
    # PING: the services' /healthz; the reconciler, the relay and the consumer send none.
    # What each user's code sends is held against these by tests/integration/test_identities.py.
    "order": f"{ORDER_KEYS} resetchannels -@all +ping +set +del",
    # writes an undecided order's flag again (SET), removes none
    "reconciler": f"{ORDER_KEYS} resetchannels -@all +set",
    # MGET: the batched reduceStock's pre-filter; INCRBY: what redis-py's incr() sends (the
    # fault point pair_after_read); no WAIT: the cluster's Redis locks wait for no replica
    "stock": (
        f"{STOCK_KEYS} resetchannels -@all +ping +exists +mget +get +set +del +incrby "
        "+decr +pexpire +time +eval +evalsha +script|load"
    ),
    "relay": f"{EVENTS_KEY} resetchannels -@all +xadd +wait",
    "events": (
        f"{EVENTS_KEY} resetchannels -@all +xreadgroup +xack +xgroup|create +xgroup|destroy"
    ),
    "sentinel": (
        "allchannels -@all +multi +slaveof +replicaof +ping +exec +subscribe +config|rewrite "
        "+role +publish +info +client|setname +client|kill +script|kill"
    ),
    "replica": "-@all +psync +replconf +ping",
    "monitor": "-@all +ping +info +role",
}
# 1 s without an answer to the sentinels' PINGs (sent every second and on every reply) and
# the primary is subjectively down; 2 of 3 agreeing make it objectively down and they elect
# one to fail over. Shorter would count a primary busy with a burst of TLS reconnections as
# dead.
DOWN_AFTER_MS, FAILOVER_TIMEOUT_MS = 1000, 10000
# Each node keeps its data in an append-only file, fsynced every second: the stock events'
# stream must outlive a restart of every node at once (the chaos run's
# `restart-all-redis`), which replication alone does not survive. What Redis has answered is
# in the kernel before the answer goes out, so a node killed (-9) and restarted has it; only
# the machine's crash can lose its last second (Redis 7.0 has no WAITAOF to wait for the
# fsync), and the outbox keeps those events for GET /stock-events (inventory/local/servers.py
# says the same of the local stack's Redis).
PERSISTENCE = "appendonly yes\nappendfsync everysec\n"


def _private(path: Path, text: str) -> None:
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text(text)


def _listen(port: int, secrets: Secrets, stem: str = tls.REDIS_STEM) -> str:
    """The port, plain or TLS only with `stem`'s certificate (inventory/cluster/tls.py)."""
    if not secrets.tls_ca:
        return f"port {port}\n"
    return tls.redis_server_lines(secrets.tls_ca, port, stem)


def server_config(node: Host, folder: Path, secrets: Secrets) -> Path:
    """redis1 starts as the primary, redis2 as its replica; after a failover the sentinels
    rewrite these files (CONFIG REWRITE), which is why they live in each host's folder."""
    primary = topology.by_role("redis")[0]
    users = "".join(
        f"user {name} on >{secrets.redis[name]} {rules}\n" for name, rules in PERMISSIONS.items()
    )
    replica_of = f"replicaof {primary.address} {topology.REDIS_PORT}\n" if node != primary else ""
    path = folder / "redis.conf"
    _private(
        path,
        f"bind {node.address}\n{_listen(topology.REDIS_PORT, secrets)}protected-mode no\n"
        f'save ""\n{PERSISTENCE}dir {folder}\n'
        "user default off\n"
        + users
        + f"masteruser replica\nmasterauth {secrets.redis['replica']}\n"
        # announced so the sentinels and replicas reach it by its host's address
        f"replica-announce-ip {node.address}\n" + replica_of,
    )
    return path


def sentinel_config(node: Host, folder: Path, secrets: Secrets) -> Path:
    primary = topology.by_role("redis")[0]
    name = topology.REDIS_MASTER
    path = folder / "sentinel.conf"
    _private(
        path,
        f"bind {node.address}\n{_listen(topology.SENTINEL_PORT, secrets, tls.SENTINEL_STEM)}"
        "protected-mode no\n"
        f"dir {folder}\n"
        # Clients (the services, the operator) authenticate to the sentinels too, and the
        # sentinels to each other with the same password.
        f"requirepass {secrets.sentinel_password}\n"
        f"sentinel sentinel-pass {secrets.sentinel_password}\n"
        f"sentinel announce-ip {node.address}\n"
        f"sentinel monitor {name} {primary.address} {topology.REDIS_PORT} 2\n"
        f"sentinel auth-user {name} sentinel\n"
        f"sentinel auth-pass {name} {secrets.redis['sentinel']}\n"
        f"sentinel down-after-milliseconds {name} {DOWN_AFTER_MS}\n"
        f"sentinel failover-timeout {name} {FAILOVER_TIMEOUT_MS}\n"
        f"sentinel parallel-syncs {name} 1\n",
    )
    return path


# --- what the operator asks of it --------------------------------------------------------------


def _monitor(node: Host, secrets: Secrets) -> redis.Redis:
    return redis.Redis(
        host=node.address,
        port=topology.REDIS_PORT,
        username="monitor",
        password=secrets.redis["monitor"],
        socket_timeout=1,
        socket_connect_timeout=1,
        decode_responses=True,
        **tls.redis_client_kwargs(secrets.tls_ca),  # type: ignore[arg-type]
    )


def role_of(node: Host, secrets: Secrets) -> str | None:
    """`master` or `slave` as the server says (None: down), and for a replica, whether its
    link to the primary is up (`slave connected`)."""
    client = _monitor(node, secrets)
    try:
        info = client.info("replication")
        role = str(info.get("role"))
        if role == "slave":
            linked = info.get("master_link_status") == "up"
            return "slave connected" if linked else "slave syncing"
        return role
    except redis.RedisError:
        return None
    finally:
        client.close()


def sentinels(secrets: Secrets) -> Sentinel:
    return Sentinel(
        [(h.address, topology.SENTINEL_PORT) for h in topology.SENTINELS],
        sentinel_kwargs={
            "password": secrets.sentinel_password,
            "socket_timeout": 1,
            **tls.redis_client_kwargs(secrets.tls_ca),
        },
        socket_timeout=1,
        **tls.redis_client_kwargs(secrets.tls_ca),
    )


def primary(secrets: Secrets) -> Host | None:
    """The Redis host the sentinels name as primary now."""
    with contextlib.suppress(redis.RedisError):
        address, _port = sentinels(secrets).discover_master(topology.REDIS_MASTER)
        return next((h for h in topology.by_role("redis") if h.address == address), None)
    return None


def replicated(secrets: Secrets) -> bool:
    """The sentinels agree on a primary that answers, its replica is linked to it, and every
    sentinel sees the other two (a failover needs their vote)."""
    found = primary(secrets)
    if found is None or role_of(found, secrets) != "master":
        return False
    others = [h for h in topology.by_role("redis") if h != found]
    if any(role_of(h, secrets) != "slave connected" for h in others):
        return False
    for node in topology.SENTINELS:
        client = redis.Redis(
            host=node.address,
            port=topology.SENTINEL_PORT,
            password=secrets.sentinel_password,
            socket_timeout=1,
            decode_responses=True,
            **tls.redis_client_kwargs(secrets.tls_ca),  # type: ignore[arg-type]
        )
        try:
            seen: dict[str, Any] = client.sentinel_master(topology.REDIS_MASTER)  # type: ignore[assignment]
            if int(seen.get("num-other-sentinels", 0)) < len(topology.SENTINELS) - 1:
                return False
        except redis.RedisError:
            return False
        finally:
            client.close()
    return True
