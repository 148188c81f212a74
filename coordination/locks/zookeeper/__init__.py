"""The ZooKeeper lock backend: the client and its connection (client.py), the lock recipe of
ephemeral-sequential nodes with fencing tokens (claim.py), and its parents (containers.py).

Its face is the backend and its TLS settings; the recipe is imported by name where a reader
needs it (the election, the chaos run's stalled holder).
"""

from __future__ import annotations

from coordination.locks.zookeeper.client import (
    RECONNECT_MAX_DELAY,
    ZooKeeperLocks,
    ZooKeeperTLS,
    digest_identity,
)

__all__ = ["RECONNECT_MAX_DELAY", "ZooKeeperLocks", "ZooKeeperTLS", "digest_identity"]
