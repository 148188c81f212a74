"""One active, many standby (seeds 000 and 002): who may run the reconciler. Each instance
campaigns; the winner leads until it resigns, dies or is cut off, and a standby takes over.

    elector.campaign(stop)   # blocks until elected: the leader's fencing token (None: stopped)
    elector.is_leader()      # asked before each pass: still the leader, as far as we can tell
    elector.resign()         # hand over at once (the next contender is elected in ms)

ZooKeeper: kazoo's Election recipe (an ephemeral sequential node per contender; the lowest
leads; its sequence number is the token). etcd (LOCK_BACKEND=etcd): etcd's election service
(`/v3/election/campaign` under a kept-alive lease; the leader key's create revision is the
token). Either token only grows from one leader to the next, which is what the fence on the
reconciler's writes needs (order_service/store.py, `settle`).
"""

from __future__ import annotations

import base64
import contextlib
import logging
import threading
from typing import Any, Protocol

import httpx
from kazoo.client import KazooClient
from kazoo.exceptions import CancelledError, KazooException
from kazoo.protocol.states import KazooState

log = logging.getLogger(__name__)


class Elector(Protocol):
    def campaign(self, stop: threading.Event) -> int | None: ...
    def is_leader(self) -> bool: ...
    def resign(self) -> None: ...
    def close(self) -> None: ...


class ZooKeeperElector:
    def __init__(self, hosts: str, path: str, identifier: str, session_timeout: float) -> None:
        self.client = KazooClient(hosts=hosts, timeout=session_timeout)
        self.client.start(timeout=max(session_timeout, 10))
        self.election = self.client.Election(path, identifier)
        self.lock = self.election.lock
        self._lost = threading.Event()
        self.client.add_listener(self._on_state)

    def _on_state(self, state: KazooState) -> None:
        if state != KazooState.CONNECTED:
            self._lost.set()  # suspended or lost: the node may be gone, leadership with it

    def campaign(self, stop: threading.Event) -> int | None:
        # Election.run(func) holds the lock while func runs; the reconciler's loop is shaped
        # the other way round (campaign, then passes while leader), so the recipe's lock is
        # taken directly: the same nodes, the same order. The wait is not cut into timed
        # tries: a timed-out try deletes its node and queues again at the back.
        canceller = threading.Thread(target=self._cancel_on, args=(stop,), daemon=True)
        canceller.start()
        while not stop.is_set():
            try:
                if self.lock.acquire(blocking=True):
                    self._lost.clear()
                    return int(self.lock.node[-10:])
            except CancelledError:
                return None
            except KazooException as exc:
                log.warning("campaign interrupted (%s); campaigning again", exc)
                stop.wait(0.5)
        return None

    def _cancel_on(self, stop: threading.Event) -> None:
        while not stop.wait(0.5):
            if self.lock.is_acquired:
                return  # elected: nothing to cancel
        self.lock.cancel()

    def is_leader(self) -> bool:
        if self._lost.is_set() or not self.lock.is_acquired or self.lock.node is None:
            return False
        try:  # a round trip: the ephemeral node is gone once the session expired
            return self.client.exists(f"{self.lock.path}/{self.lock.node}") is not None
        except KazooException:
            return False

    def resign(self) -> None:
        with contextlib.suppress(KazooException):
            self.lock.release()

    def close(self) -> None:
        self.resign()
        self.client.stop()
        self.client.close()


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


class EtcdElector:
    """etcd's election service through the JSON gateway, on a lease of the etcd lock backend's
    pool (kept alive by its thread): a campaign that times out is asked again on the same
    lease, which resumes its place in the queue."""

    def __init__(self, endpoints: list[str], name: str, identifier: str, ttl: float) -> None:
        from shared.locks.etcd import EtcdLocks

        self.locks = EtcdLocks(endpoints, ttl=ttl)
        self.name = name
        self.identifier = identifier
        self.lease = self.locks.checkout()
        self.leader: dict[str, Any] | None = None

    def campaign(self, stop: threading.Event) -> int | None:
        body = {"name": _b64(self.name), "lease": self.lease.id, "value": _b64(self.identifier)}
        while not stop.is_set():
            if not self.lease.valid():  # expired while waiting: a new lease, a new place
                self.lease = self.locks.checkout()
                body["lease"] = self.lease.id
            try:
                reply = self.locks.gateway.post("/v3/election/campaign", body, timeout=1.0)
            except httpx.TimeoutException:
                continue
            self.leader = reply["leader"]
            return int(self.leader["rev"])
        return None

    def is_leader(self) -> bool:
        if self.leader is None or not self.lease.valid():
            return False
        try:
            reply = self.locks.gateway.post("/v3/election/leader", {"name": _b64(self.name)})
        except Exception:
            return False
        return bool(reply.get("kv", {}).get("key") == self.leader["key"])

    def resign(self) -> None:
        if self.leader is not None:
            with contextlib.suppress(Exception):
                self.locks.gateway.post("/v3/election/resign", {"leader": self.leader})
            self.leader = None

    def close(self) -> None:
        self.resign()
        self.locks.close()
