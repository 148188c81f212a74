"""One active, many standby: who may run a singleton job (the reconciler). Each instance
campaigns; the winner leads until it resigns, dies, or is no longer sure it leads, and a
standby takes over.

    elector.campaign(stop)   # blocks until elected: the leader's fencing token (None: stopped)
    elector.is_leader()      # asked before each pass: still the leader, as far as we can tell
    elector.resign()         # hand over at once; then campaign again to stand by

A leader that is not sure it leads (its connection was suspended, its session or lease lost,
even for a blip that the session survived) stops at its next question, resigns, and campaigns
again at the back of the queue. It never resumes on a leadership it may have lost meanwhile:
the writes it would make are fenced by the token of whoever leads now.

ZooKeeper: the project's lock recipe on one name (coordination/locks/zookeeper/claim.py: an
ephemeral sequential node per contender, the lowest leads, kazoo's node names), held for as
long as the leader leads. So the election gets what the locks have: kazoo's polling handler,
the connection state watched (any SUSPENDED or LOST since the election ends the leadership),
and the cleanup of a node whose delete was lost with the connection, which would otherwise
block the queue for as long as a surviving session lives. The token is the pzxid the leader saw
when it found its node first; it only grows from leader to leader.

etcd (LOCK_BACKEND=etcd): etcd's election service (`/v3/election/campaign` under a kept-alive
lease; the token is the leader key's create revision). A lease lost is a leadership lost.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

import httpx
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from coordination.locks.base import LockError
from coordination.locks.etcd import EtcdLocks
from coordination.locks.zookeeper import ZooKeeperLocks, ZooKeeperTLS
from coordination.locks.zookeeper.claim import ZooKeeperClaim
from shared.config.settings import Settings

log = logging.getLogger(__name__)
RETRY = 0.5  # seconds between campaigns when the coordination service cannot be reached
SLICE = 0.5  # a campaign waits in slices, so a stop is seen; its place in the queue stays


class Elector(Protocol):
    def campaign(self, stop: threading.Event) -> int | None: ...
    def is_leader(self) -> bool: ...
    def resign(self) -> None: ...
    def close(self) -> None: ...


class ZooKeeperElector:
    def __init__(
        self,
        hosts: str,
        path: str,
        identifier: str,
        session_timeout: float,
        auth: str | None = None,
        tls: ZooKeeperTLS | None = None,
    ) -> None:
        root, self.name = path.rstrip("/").rsplit("/", 1)
        self.identifier = identifier.encode()  # each node's data: who contends
        self.locks = ZooKeeperLocks(hosts, root, session_timeout, auth=auth, tls=tls)
        self.claim: ZooKeeperClaim | None = None
        self.elected_at = -1  # the connection's interruption count when elected

    def campaign(self, stop: threading.Event) -> int | None:
        while not stop.is_set():
            try:
                if self.claim is None:
                    self.claim = self.locks.new_claim([self.name], self.identifier)
                held = self.claim.wait(time.monotonic() + SLICE)
            except LockError as exc:  # no connection, or the session (and our node) is gone
                log.warning("campaign interrupted (%s); campaigning again", exc)
                self.resign()
                stop.wait(RETRY)
                continue
            if self.name in held:
                self.elected_at = self.locks.interruptions
                return self.claim.tokens[self.name]
        self.resign()
        return None

    def is_leader(self) -> bool:
        claim = self.claim
        if claim is None or self.name not in claim.held:
            return False
        if self.locks.interruptions != self.elected_at or not self.locks.connected.is_set():
            return False  # suspended or lost since the election: not sure any more
        try:  # a round trip: the ephemeral node is gone once the session expired
            return self.locks.client.exists(claim.nodes[self.name]) is not None
        except (KazooException, KazooTimeoutError, KeyError):
            return False

    def resign(self) -> None:
        """Delete our node (now, or once reconnected: the lock backend's reaper)."""
        if self.claim is not None:
            self.claim.release_all()
            self.claim = None

    def close(self) -> None:
        self.resign()
        self.locks.close()


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


class EtcdElector:
    """etcd's election service through the JSON gateway, on a lease of the etcd lock backend's
    pool (kept alive by its thread): a campaign that times out is asked again on the same
    lease, which resumes its place in the queue; a lease that expired is replaced."""

    def __init__(self, endpoints: list[str], name: str, identifier: str, ttl: float) -> None:
        self.locks = EtcdLocks(endpoints, ttl=ttl)
        self.name = name
        self.identifier = identifier
        self.lease: Any = None
        self.leader: dict[str, Any] | None = None

    def campaign(self, stop: threading.Event) -> int | None:
        while not stop.is_set():
            try:
                if self.lease is None or not self.lease.valid():
                    self.lease = self.locks.checkout()  # a new lease: a new place at the back
                body = {
                    "name": _b64(self.name),
                    "lease": self.lease.id,
                    "value": _b64(self.identifier),
                }
                reply = self.locks.gateway.post("/v3/election/campaign", body, timeout=SLICE)
            except httpx.TimeoutException:
                continue  # still queued on the same lease
            except (LockError, httpx.HTTPError, KeyError, ValueError) as exc:
                log.warning("campaign interrupted (%s); campaigning again", exc)
                stop.wait(RETRY)
                continue
            self.leader = reply["leader"]
            return int(self.leader["rev"])
        return None

    def is_leader(self) -> bool:
        if self.leader is None or self.lease is None or not self.lease.valid():
            return False
        try:
            reply = self.locks.gateway.post("/v3/election/leader", {"name": _b64(self.name)})
        except (LockError, httpx.HTTPError, ValueError):
            return False
        return bool(reply.get("kv", {}).get("key") == self.leader["key"])

    def resign(self) -> None:
        if self.leader is not None:
            with contextlib.suppress(LockError, httpx.HTTPError, ValueError):
                self.locks.gateway.post("/v3/election/resign", {"leader": self.leader})
            self.leader = None

    def close(self) -> None:
        self.resign()
        self.locks.close()


def make_elector(settings: Settings, path: str, identifier: str) -> Elector:
    """An elector for one singleton job (the reconciler, the relay of stock events), on the
    coordination service ELECTION_BACKEND names (by default: etcd with LOCK_BACKEND=etcd,
    else ZooKeeper)."""
    if settings.election() == "etcd":
        endpoints = settings.etcd_endpoint_list()
        return EtcdElector(endpoints, path, identifier, settings.etcd_lease_ttl)
    return ZooKeeperElector(
        settings.zk_hosts,
        path,
        identifier,
        settings.zk_session_timeout,
        auth=settings.zk_auth or None,
        tls=ZooKeeperTLS.of(settings.zk_ca_file, settings.zk_cert_file, settings.zk_key_file),
    )


def serve_elected(
    elector: Elector,
    identifier: str,
    stop: threading.Event,
    lead: Callable[[int], None],
    backoff: Callable[[int], float],
    logger: logging.Logger,
) -> None:
    """The life of a singleton program (the reconciler, the relay, the deliverer of webhooks):
    campaign, `lead(token)` while elected, resign, campaign again; until `stop`. Whatever
    fails (the election's backend, a leader's database, a bug) is logged on the program's own
    `logger`, waited out (`backoff(failures in a row)`) and tried again: nothing restarts a
    program that exits, and its standby would die of the same fault. The elector is closed at
    the end."""
    logger.info("%s campaigning at=%.3f", identifier, time.time())
    failures = 0
    try:
        while not stop.is_set():
            try:
                token = elector.campaign(stop)
                if token is None:
                    break
                logger.warning("%s elected token=%d at=%.3f", identifier, token, time.time())
                lead(token)
                failures = 0
            except Exception as exc:
                failures += 1
                logger.warning(
                    "%s campaign failed at=%.3f: %r", identifier, time.time(), exc, exc_info=True
                )
                stop.wait(backoff(failures))
            # Deposed, not sure, refused or stopped: hand over. A resign that fails is no
            # matter: the node goes with the session anyway, and the next campaign starts anew.
            try:
                elector.resign()
            except Exception as exc:
                logger.warning("%s resign failed at=%.3f: %r", identifier, time.time(), exc)
    finally:
        elector.close()
        logger.warning("%s resigned at=%.3f", identifier, time.time())
