"""ZooKeeper locks: the connection, its state, and the cleanup of lock nodes left behind.
The lock recipe itself (several names per claim, fencing tokens) is in claim.py.

The client's connection state is watched: once it has been SUSPENDED or LOST since a claim
began, its leases report themselves no longer held, and the holder aborts before commit.

A reply lost with the connection (a leader dies, a socket resets) does not end the session, so a
node the client could not delete, or does not know it created, would block its queue for as long
as the process lives: such nodes are found by their unique prefix and deleted once reconnected.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    KazooException,
    NoNodeError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry
from kazoo.security import make_acl, make_digest_acl

from coordination.locks.base import LockBackend, LockUnavailable
from coordination.locks.kazoo_handler import PollingHandler
from coordination.locks.zookeeper.claim import ZooKeeperClaim
from coordination.locks.zookeeper.containers import ensure_container

log = logging.getLogger(__name__)
# kazoo retries a lost connection forever with its delay doubling up to an hour: after an
# outage of the ensemble (a partition without quorum, 10 s) a client could wait 6 s or more for
# its next look, long after the quorum was back (the chaos run's zk-partition-majority: 15.4 s
# without a confirmation for a 10 s partition). Doubling from 0.1 s up to 1 s (times kazoo's
# jitter, 0.6-1.4) keeps the first attempts quick and reconnects within about a second of the
# ensemble's return; a handful of clients per host trying once a second costs it nothing.
RECONNECT_MAX_DELAY = 1.0


def digest_identity(auth: str | None) -> dict[str, Any]:
    """KazooClient's arguments for a digest identity: authenticated at every connection, and
    the creator's own ACL (all permissions) plus read for everyone on the nodes it creates."""
    if not auth:
        return {}
    user, password = auth.split(":", 1)
    return {
        "auth_data": [("digest", auth)],
        "default_acl": [
            make_digest_acl(user, password, all=True),
            make_acl("world", "anyone", read=True),
        ],
    }


@dataclass(frozen=True)
class ZooKeeperTLS:
    """TLS to ZooKeeper's secure client port (kazoo's use_ssl): the CA that signed the
    ensemble's certificates, and this client's own certificate and key when the ensemble asks
    for one (ssl.clientAuth=need)."""

    ca: str
    certfile: str | None = None
    keyfile: str | None = None

    def kazoo_options(self) -> dict[str, Any]:
        # check_hostname: the certificate must name the address dialled, not merely chain to
        # the CA (kazoo's default is off), or any holder of a certificate of that CA could
        # stand in for the ensemble.
        return {
            "use_ssl": True,
            "verify_certs": True,
            "check_hostname": True,
            "ca": self.ca,
            "certfile": self.certfile,
            "keyfile": self.keyfile,
        }

    @classmethod
    def of(cls, ca_file: str, cert_file: str = "", key_file: str = "") -> ZooKeeperTLS | None:
        """From the settings ZK_CA_FILE, ZK_CERT_FILE, ZK_KEY_FILE; None: plain text."""
        return cls(ca_file, cert_file or None, key_file or None) if ca_file else None


class ZooKeeperLocks(LockBackend):
    name = "zookeeper"

    def __init__(
        self,
        hosts: str,
        root: str,
        session_timeout: float = 10.0,
        connect_timeout: float = 5.0,
        auth: str | None = None,
        tls: ZooKeeperTLS | None = None,
    ) -> None:
        """`auth`: `user:password`, a digest identity: every node this client creates is then
        its identity's alone to change or delete (and readable by everyone), and the paths it
        works under must let that identity create and delete (the cluster sets them up)."""
        self.hosts = hosts
        self.root = root.rstrip("/")
        self.connect_timeout = connect_timeout
        handler = PollingHandler()
        self._client = KazooClient(
            hosts=hosts,
            timeout=session_timeout,
            handler=handler,
            connection_retry=KazooRetry(
                max_tries=-1,
                delay=0.1,
                backoff=2,
                max_delay=RECONNECT_MAX_DELAY,
                sleep_func=handler.sleep_func,
            ),
            **digest_identity(auth),
            **(tls.kazoo_options() if tls else {}),
        )
        self._client.add_listener(self._on_state)
        self._started = False
        self._start_guard = threading.Lock()
        # Bumped on every SUSPENDED/LOST; a lease of a claim begun before a bump is not trusted.
        self.interruptions = 0
        # Set while CONNECTED: a claim made during a reconnection (a leader election, say)
        # waits for it within its deadline instead of failing at once.
        self.connected = threading.Event()
        self._state_waiters: set[threading.Event] = set()
        self._guard = threading.Lock()
        # Lock paths known to exist. They are container nodes, which ZooKeeper deletes once
        # empty (zookeeper/containers.py): a create that finds its parent gone forgets it here
        # and makes it again.
        self._parents: set[str] = set()
        # Nodes a claim could not delete (or could not tell whether it created) while the
        # connection was down, as (lock path, node prefix). The session outlives a short
        # disconnection, and so would these nodes, blocking their queues for good: they are
        # deleted once the connection is back.
        self._leftovers: set[tuple[str, str]] = set()
        self._reaping = threading.Lock()

    @property
    def client(self) -> KazooClient:
        self._ensure_started()
        return self._client

    def _on_state(self, state: str) -> None:
        if state == KazooState.CONNECTED:
            self.connected.set()
            if self._leftovers:
                # Listeners run on kazoo's connection thread, which must not block on requests.
                threading.Thread(target=self.reap, name="zk-reaper", daemon=True).start()
        else:
            self.connected.clear()
            self.interruptions += 1
            log.warning("zookeeper connection %s: leases granted before now are not trusted", state)
        with self._guard:
            waiters = list(self._state_waiters)
        for event in waiters:
            event.set()

    def _ensure_started(self) -> None:
        if self._started:
            return
        with self._start_guard:
            if self._started:
                return
            try:
                self._client.start(timeout=self.connect_timeout)
            except (KazooTimeoutError, KazooException) as exc:
                self._client.stop()
                raise LockUnavailable("zookeeper", f"no connection to {self.hosts}") from exc
            self._started = True
            if self._client.state == KazooState.CONNECTED:
                self.connected.set()

    def path(self, name: str) -> str:
        return f"{self.root}/{name}"

    def ensure_parents(self, names: Iterable[str]) -> None:
        for name in names:
            path = self.path(name)
            if path not in self._parents:
                ensure_container(self.client, path)
                with self._guard:
                    self._parents.add(path)

    def forget_parents(self, names: Iterable[str]) -> None:
        with self._guard:
            self._parents -= {self.path(name) for name in names}

    def watch_state(self, event: threading.Event, on: bool) -> None:
        with self._guard:
            if on:
                self._state_waiters.add(event)
            else:
                self._state_waiters.discard(event)

    def leave_behind(self, lock_path: str, prefix: str) -> None:
        """Delete our node(s) under lock_path named with prefix, now or once reconnected."""
        with self._guard:
            self._leftovers.add((lock_path, prefix))
        if self.connected.is_set():
            self.reap()

    def reap(self) -> None:
        with self._reaping:
            with self._guard:
                pending = sorted(self._leftovers)
            for lock_path, prefix in pending:
                try:
                    for child in self._client.get_children(lock_path):
                        if child.startswith(prefix):
                            self._client.delete(f"{lock_path}/{child}")
                except NoNodeError:
                    pass  # the lock path or the node is gone already
                except (KazooException, KazooTimeoutError) as exc:
                    log.warning("zookeeper: %s/%s* not deleted yet (%r)", lock_path, prefix, exc)
                    continue  # retried on the next reconnection
                with self._guard:
                    self._leftovers.discard((lock_path, prefix))

    def new_claim(self, names: list[str], data: bytes = b"") -> ZooKeeperClaim:
        self._ensure_started()
        return ZooKeeperClaim(self, names, data)

    def healthy(self) -> bool:
        try:
            self._ensure_started()
        except LockUnavailable:
            return False
        return self._client.state == KazooState.CONNECTED

    def close(self) -> None:
        if self._started:
            self._client.stop()
            self._client.close()
            self._started = False
