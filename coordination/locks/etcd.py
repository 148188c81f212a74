"""LOCK_BACKEND=etcd: etcd's lock service through its v3 JSON gateway, with leases kept alive
from a thread (seed 002).

A thin module over httpx rather than a client library: python-etcd3 is unmaintained and breaks
with current protobuf, and etcd3gw's Lock grants a lease per acquire and never revokes it, and
its unlock does not check ownership. What this does instead:
- Leases. A holder (one claim) checks a lease out of a per-process pool and returns it when the
  claim ends, so a lease is granted once and reused, never shared by two holders at a time: the
  lock service's key is `<name>/<lease id>`, so two holders on one lease would both "hold" it.
  One thread renews every pooled lease every TTL/3. A keep-alive reply without a TTL means the
  lease expired (its keys are gone, someone else may hold the lock): the lease is lost for good.
- The lock. `/v3/lock/lock` puts the key under the lease and waits for the key just before it
  by create revision to be deleted (no herd: one waiter wakes per release). A request that
  times out leaves its key queued; asking again with the same lease picks the same place up
  (the service finds the key already there), which the combining claims do. A lease that had a
  request time out is revoked rather than reused: revoking deletes any key the request left.
- The fencing token: the revision in the lock reply's header. It only grows from holder to
  holder: a holder is answered at the revision of its own put (no predecessor) or of the
  deletion of its predecessor's key, which is above any revision that predecessor was told.
- Lease loss: `still_held` is false once a keep-alive found the lease expired, or when no
  keep-alive has succeeded for a TTL (the whole process was paused): the holder aborts before
  commit.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
from typing import Any

import httpx

from coordination.locks.base import LockBackend, LockUnavailable, SequentialClaim

log = logging.getLogger(__name__)

# Below this a lock request is not worth a round trip: a claim that has run out of time
# learns that its name is not free yet without asking.
MIN_REQUEST = 0.01


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


class EtcdGateway:
    """POSTs to etcd's JSON gateway on one reused client (a new one costs ~29 ms), trying the
    endpoints in order when one cannot be reached."""

    def __init__(self, endpoints: list[str]) -> None:
        self.endpoints = [e.rstrip("/") for e in endpoints]
        self.client = httpx.Client(timeout=5.0)

    def post(self, path: str, body: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """The reply's JSON. Raises httpx.TimeoutException when `timeout` runs out (the caller
        decides what that means), LockUnavailable when no endpoint answers."""
        failure = ""
        for endpoint in self.endpoints:
            try:
                answer = self.client.post(
                    endpoint + path, json=body, timeout=timeout if timeout is not None else 5.0
                )
            except httpx.TimeoutException:
                raise
            except httpx.TransportError as exc:
                failure = f"{endpoint}: {type(exc).__name__}"
                continue
            if answer.status_code != 200:
                raise LockUnavailable("etcd", f"{path}: HTTP {answer.status_code} {answer.text}")
            reply: dict[str, Any] = answer.json()
            return reply
        raise LockUnavailable("etcd", failure)

    def close(self) -> None:
        self.client.close()


class EtcdLease:
    def __init__(self, lease_id: str, ttl: float) -> None:
        self.id = lease_id
        self.hex = format(int(lease_id), "x")
        self.ttl = ttl
        self.renewed_at = time.monotonic()
        self.lost = False
        self.timed_out = False  # a lock request on it timed out: revoke, do not reuse

    def valid(self) -> bool:
        return not self.lost and time.monotonic() - self.renewed_at < self.ttl


class EtcdLocks(LockBackend):
    name = "etcd"

    def __init__(self, endpoints: list[str], ttl: float = 10.0, prefix: str = "inventory/locks/"):
        self.gateway = EtcdGateway(endpoints)
        self.ttl = ttl
        self.prefix = prefix
        self._free: list[EtcdLease] = []
        self._leases: set[EtcdLease] = set()  # every lease of this process, free or in use
        self._guard = threading.Lock()
        self._closed = threading.Event()
        self._keeper: threading.Thread | None = None

    def new_claim(self, names: list[str]) -> EtcdClaim:
        return EtcdClaim(self, names, self.checkout())

    def checkout(self) -> EtcdLease:
        """A kept-alive lease of the pool, for one holder at a time (a claim, an elector)."""
        with self._guard:
            while self._free:
                lease = self._free.pop()
                if lease.valid():
                    return lease
                self._leases.discard(lease)
        granted = self.gateway.post("/v3/lease/grant", {"TTL": max(1, round(self.ttl))})
        lease = EtcdLease(str(granted["ID"]), self.ttl)
        with self._guard:
            self._leases.add(lease)
            if self._keeper is None or not self._keeper.is_alive():
                self._keeper = threading.Thread(
                    target=self._keep_alive_forever, name="etcd-lease-keeper", daemon=True
                )
                self._keeper.start()
        return lease

    def _checkin(self, lease: EtcdLease) -> None:
        if lease.valid() and not lease.timed_out and not self._closed.is_set():
            with self._guard:
                self._free.append(lease)
            return
        with self._guard:
            self._leases.discard(lease)
        self._revoke(lease)

    def _revoke(self, lease: EtcdLease) -> None:
        try:
            self.gateway.post("/v3/lease/revoke", {"ID": lease.id})
        except (LockUnavailable, httpx.HTTPError) as exc:
            log.warning("etcd lease %s not revoked (%s); it expires by its TTL", lease.hex, exc)

    def _keep_alive_forever(self) -> None:
        while not self._closed.wait(self.ttl / 3):
            with self._guard:
                leases = list(self._leases)
            for lease in leases:
                try:
                    self._keep_alive(lease)
                except Exception:  # a malformed reply (a proxy's page) for one lease never
                    # stops the others' renewals: unrenewed, it is distrusted by its own TTL
                    log.exception("etcd lease %s not renewed", lease.hex)

    def _keep_alive(self, lease: EtcdLease) -> None:
        sent = time.monotonic()
        try:
            reply = self.gateway.post("/v3/lease/keepalive", {"ID": lease.id})
        except (LockUnavailable, httpx.HTTPError) as exc:
            log.warning("etcd lease %s not renewed: %s", lease.hex, exc)
            return
        if int(reply.get("result", {}).get("TTL", 0)) <= 0:
            lease.lost = True  # expired: its keys are deleted, its locks may be someone else's
            log.warning("etcd lease %s expired before it was renewed", lease.hex)
        else:
            lease.renewed_at = sent  # the lease runs from when the renewal was asked for

    def healthy(self) -> bool:
        try:
            self.gateway.post("/v3/maintenance/status", {}, timeout=2.0)
            return True
        except (LockUnavailable, httpx.HTTPError):
            return False

    def close(self) -> None:
        self._closed.set()
        with self._guard:
            leases, self._free, self._leases = list(self._leases), [], set()
        for lease in leases:
            self._revoke(lease)
        self.gateway.close()


class EtcdClaim(SequentialClaim):
    def __init__(self, locks: EtcdLocks, names: list[str], lease: EtcdLease) -> None:
        super().__init__(names)
        self.locks = locks
        self.etcd_lease = lease
        self.keys: dict[str, str] = {}  # name -> the lock key (base64) the service answered

    def take(self, name: str, timeout: float) -> tuple[int | None, str] | None:
        if timeout < MIN_REQUEST:
            return None
        body = {"name": _b64(self.locks.prefix + name), "lease": self.etcd_lease.id}
        try:
            reply = self.locks.gateway.post("/v3/lock/lock", body, timeout=timeout)
        except httpx.TimeoutException:
            self.etcd_lease.timed_out = True
            return None
        except httpx.HTTPError as exc:
            raise LockUnavailable("etcd", type(exc).__name__) from exc
        self.keys[name] = reply["key"]
        key = base64.b64decode(reply["key"]).decode()
        return int(reply["header"]["revision"]), key

    def give_back(self, name: str) -> None:
        key = self.keys.pop(name, None)
        if key is None:
            return
        try:
            self.locks.gateway.post("/v3/lock/unlock", {"key": key})
        except (LockUnavailable, httpx.HTTPError) as exc:
            self.etcd_lease.timed_out = True  # the key may still be there: revoke the lease
            log.warning("etcd unlock of %s failed (%s); the lease is revoked", name, exc)

    def still_held(self) -> bool:
        return self.etcd_lease.valid()

    def release_all(self) -> None:
        super().release_all()
        self.locks._checkin(self.etcd_lease)
