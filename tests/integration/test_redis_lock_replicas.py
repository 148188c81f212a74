"""REDIS_LOCK_MIN_REPLICAS (coordination/locks/redis.py): a Redis lock is granted only once that
many replicas have its SET, asked with WAIT in the acquiring round trip (one pipeline, one
connection: WAIT counts the replicas that have that connection's writes). A primary and a
replica of the test's own; the replica paused is a replica that has not taken the SET."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from coordination.locks.base import LockUnavailable
from coordination.locks.redis import RedisLocks
from inventory.local.servers import (
    ServerProcess,
    free_port,
    redis_argv,
    start_redis,
    start_server,
    wait_until,
)
from tests.conftest import unique


@pytest.fixture
def primary_and_replica(tmp_path: Path) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    primary = start_redis(tmp_path / "primary")
    port = free_port()
    folder = tmp_path / "replica"
    folder.mkdir()
    argv = [*redis_argv(folder, port), "--replicaof", "127.0.0.1", str(primary.port)]
    replica = start_server("redis", argv, port, folder, lambda: True, 20)
    client = redis.Redis(port=primary.port, decode_responses=True)
    try:
        wait_until(
            lambda: (client.info("replication").get("slave0") or {}).get("state") == "online",
            20,
            "a replica in sync",
        )
        yield primary, replica
    finally:
        client.close()
        replica.stop()
        primary.stop()


def test_a_lock_is_granted_once_a_replica_has_it_and_refused_while_none_does(
    primary_and_replica: tuple[ServerProcess, ServerProcess],
) -> None:
    primary, replica = primary_and_replica
    client = redis.Redis(port=primary.port)
    locks = RedisLocks(client, ttl=10, min_replicas=1)
    name = unique("sku")
    try:
        with locks.hold([name], timeout=5) as lease:  # the replica took the SET: granted
            assert lease.token_for(name) is not None
        replica.pause()
        try:
            with (
                pytest.raises(LockUnavailable, match="0 of 1 replicas confirmed the lock"),
                locks.hold([name], timeout=5),
            ):
                pass
        finally:
            replica.resume()
        assert client.get(f"inventory:lock:{name}") is None  # the ungranted SET was released
    finally:
        locks.close()
        client.close()
