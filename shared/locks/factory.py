"""Build the lock backend that LOCK_BACKEND names."""

from __future__ import annotations

from typing import Any

from shared.locks.base import LockBackend
from shared.locks.none import NoLock
from shared.settings import Settings


def make_lock_backend(settings: Settings, **clients: Any) -> LockBackend:
    backend = settings.lock_backend
    if backend == "zookeeper":
        from shared.locks.zookeeper import ZooKeeperLocks

        return ZooKeeperLocks(settings.zk_hosts, settings.lock_root, settings.zk_session_timeout)
    if backend == "none":
        return NoLock()
    raise ValueError(f"LOCK_BACKEND={backend!r} is not available")
