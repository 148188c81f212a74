"""Build the lock backend that LOCK_BACKEND names."""

from __future__ import annotations

import redis
from sqlalchemy import Engine

from coordination.locks.base import LockBackend
from shared.config.settings import Settings


def make_lock_backend(settings: Settings, engine: Engine, redis_client: redis.Redis) -> LockBackend:
    """`engine` is the stock database (for `database`); `redis_client` the flag Redis (for
    `redis`). Nothing connects here: every backend connects on first use."""
    backend = settings.lock_backend
    if backend == "zookeeper":
        from coordination.locks.zookeeper import ZooKeeperLocks, ZooKeeperTLS

        return ZooKeeperLocks(
            settings.zk_hosts,
            settings.lock_root,
            settings.zk_session_timeout,
            auth=settings.zk_auth or None,
            tls=ZooKeeperTLS.of(settings.zk_ca_file, settings.zk_cert_file, settings.zk_key_file),
        )
    if backend == "redis":
        from coordination.locks.redis import RedisLocks

        return RedisLocks(
            redis_client, ttl=settings.redis_lock_ttl, min_replicas=settings.redis_lock_min_replicas
        )
    if backend == "etcd":
        from coordination.locks.etcd import EtcdLocks

        return EtcdLocks(settings.etcd_endpoint_list(), ttl=settings.etcd_lease_ttl)
    if backend == "database":
        from coordination.locks.database import DatabaseLocks

        return DatabaseLocks(engine)
    if backend == "redlock":
        from coordination.locks.redlock import RedLocks

        return RedLocks(settings.redlock_url_list(), ttl=settings.redlock_ttl)
    if backend == "unique-key":
        from coordination.locks.unique_key import UniqueKeyLocks

        return UniqueKeyLocks(engine, ttl=settings.unique_key_lock_ttl)
    from coordination.locks.none import NoLock

    return NoLock()
