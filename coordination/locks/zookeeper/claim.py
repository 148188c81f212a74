"""The ZooKeeper lock recipe: ephemeral-sequential nodes, each waiter watching only its
predecessor (the article's "high-efficiency" lock, no herd effect), for several names at once.

Why not kazoo's Lock recipe: it queues on one path per instance, so holding n names costs n
whole lock cycles one after another (create, getChildren, delete each), and its acquire cannot
share a ZooKeeper transaction with anything. Combining (stock_service/deduction/steps.py) holds the
names of a whole batch of deductions at once. Here a claim on n names is enqueued in one `multi`
transaction (one node per name, all created atomically), their queues are read with pipelined
getChildren, and they are released with one `multi` delete: two write transactions per hold,
whatever n is. The node names follow kazoo's convention (`<uuid>__lock__<sequence>`), so
kazoo's Lock and its `contenders()` see these nodes as contenders, and the other way round.

Deadlock: a claim enqueues on all its names in one transaction, so ZooKeeper's zxid order puts
any two claims in the same order in every queue they share. A claim only ever waits for
claims enqueued before it, so waiting can never go round in a circle.

Fencing token: the pzxid of the lock path in the getChildren2 reply that shows the holder its
node is first (the zxid of the last change to that path's children). No request is spent on it:
getChildren2 costs what getChildren does, and the check needs the children anyway. It only
grows from holder to holder: a holder finds itself first only after its predecessor's node was
deleted (released, or gone with an expired session), a change of the path's children whose zxid
is above every zxid the predecessor could have seen, its token included. The node's own czxid
would be a token too (the recipe used it, from the create2 reply), but kazoo's multi does not
return create2 stats, and mixing the two on one path could go backwards: a waiter's czxid can
be below the pzxid its predecessor saw.

Lost replies: a create retried after a lost reply first looks for its node by the claim's
unique prefix; nodes it cannot delete go to the backend's cleanup (client.py).
"""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from collections.abc import Iterable
from typing import Protocol

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    ConnectionLoss,
    KazooException,
    NoNodeError,
    OperationTimeoutError,
    RolledBackError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError

from coordination.locks.base import Claim, Lease, LockUnavailable

log = logging.getLogger(__name__)

NODE_MARK = "__lock__"
SEQUENCE = re.compile(r"__lock__(\d{10})$")
# Lost on the wire, not on the server: wait for the connection to come back and try again.
TRANSIENT = (ConnectionLoss, OperationTimeoutError, KazooTimeoutError)


class ClaimBackend(Protocol):
    """What a claim needs of its backend (client.py's ZooKeeperLocks): the
    session, its state, and the lock paths' housekeeping. Named here so the recipe does not
    import the backend that imports it."""

    connected: threading.Event
    interruptions: int

    @property
    def client(self) -> KazooClient: ...

    def path(self, name: str) -> str: ...
    def ensure_parents(self, names: Iterable[str]) -> None: ...
    def forget_parents(self, names: Iterable[str]) -> None: ...
    def watch_state(self, event: threading.Event, on: bool) -> None: ...
    def leave_behind(self, lock_path: str, prefix: str) -> None: ...


class ZooKeeperClaim(Claim):
    def __init__(self, locks: ClaimBackend, names: list[str], data: bytes = b"") -> None:
        super().__init__(names)
        self.locks = locks
        self.data = data  # each node's data: who contends (an elector's name), or nothing
        self.client = locks.client
        # Props to kazoo (and Curator before it): a create can succeed on the server while
        # its reply is lost; the unique prefix lets us find our node on retry.
        self.prefix = uuid.uuid4().hex + NODE_MARK
        self.nodes: dict[str, str] = {}  # name -> our node's full path
        self.tokens: dict[str, int | None] = {}
        self.released: set[str] = set()
        self.create_tried = False
        self.interruptions_at = locks.interruptions
        self.woken = threading.Event()
        self.holders: dict[str, str] = {}  # name -> the node first in its queue, last seen

    # --- waiting ---------------------------------------------------------------------------

    def wait(self, deadline: float) -> frozenset[str]:
        while True:
            if not self._connected_by(deadline):
                if self.held:
                    return frozenset(self.held)
                raise LockUnavailable("zookeeper", f"connection {self.client.state.lower()}")
            try:
                if not self.nodes and not self.held and self._wanted():
                    self._enqueue()
                blocked = self._check()
                if not blocked:
                    return frozenset(self.held)
                if time.monotonic() >= deadline:
                    return frozenset(self.held)
                self._wait_for(blocked, deadline)
            except TRANSIENT:
                continue  # the loop waits for the connection, then checks again
            except NoNodeError:
                if self.nodes:
                    raise LockUnavailable("zookeeper", "a lock node vanished") from None
                continue  # a parent removed while empty: made again on the next round
            except SessionExpiredError as exc:
                raise LockUnavailable(
                    "zookeeper", "session expired; the lock nodes are gone"
                ) from exc
            except KazooException as exc:
                raise LockUnavailable("zookeeper", type(exc).__name__) from exc

    def _connected_by(self, deadline: float) -> bool:
        return self.locks.connected.wait(max(deadline - time.monotonic(), 0.0))

    def _wanted(self) -> list[str]:
        return [n for n in self.names if n not in self.released]

    def _enqueue(self) -> None:
        names = self._wanted()
        found = self._find_nodes(names) if self.create_tried else {}
        self.locks.ensure_parents(names)
        self.create_tried = True
        if found:
            self.nodes = found
            return
        if len(names) == 1:
            try:
                created = self.client.create(
                    f"{self.locks.path(names[0])}/{self.prefix}",
                    self.data,
                    ephemeral=True,
                    sequence=True,
                )
            except NoNodeError:
                self._parent_gone(names)
                raise
            self.nodes = {names[0]: created}
            return
        transaction = self.client.transaction()
        for name in names:
            transaction.create(
                f"{self.locks.path(name)}/{self.prefix}", self.data, ephemeral=True, sequence=True
            )
        results = transaction.commit()
        # A failed multi applies nothing and reports RolledBackError for every other op.
        failures = [
            r for r in results if isinstance(r, Exception) and not isinstance(r, RolledBackError)
        ]
        if failures:
            if isinstance(failures[0], NoNodeError):
                self._parent_gone(names)
            self.create_tried = False  # nothing was created
            raise failures[0]
        self.nodes = dict(zip(names, results, strict=True))

    def _parent_gone(self, names: list[str]) -> None:
        """A lock path vanished (an empty container the server removed): nothing was created;
        the next round makes the parents again."""
        self.locks.forget_parents(names)
        self.create_tried = False

    def _find_nodes(self, names: list[str]) -> dict[str, str]:
        """After a create whose reply was lost: our nodes, if the create was applied. A lock
        path gone holds none of them (our node would have kept its container): it is made
        again before the create, which would otherwise fail on it, and this look with it, on
        every round until the deadline and past it."""
        found = {}
        for name in names:
            try:
                children = self.client.get_children(self.locks.path(name))
            except NoNodeError:
                self.locks.forget_parents([name])
                continue
            for child in children:
                if child.startswith(self.prefix):
                    found[name] = f"{self.locks.path(name)}/{child}"
        return found

    def _check(self) -> dict[str, str]:
        """One pipelined round: the queue of every name not yet held. Names where our node is
        first become held, with their token; returns the predecessor we wait behind, per
        blocked name."""
        pending = [n for n in self._wanted() if n not in self.held]
        replies = {
            n: self.client.get_children_async(self.locks.path(n), include_data=True)
            for n in pending
        }
        blocked = {}
        for name, reply in replies.items():
            children, stat = reply.get()
            predecessor = _predecessor(children, self.nodes[name].rsplit("/", 1)[1])
            if predecessor is None:
                self.held.add(name)
                self.tokens[name] = int(stat.pzxid)
            else:
                blocked[name] = f"{self.locks.path(name)}/{predecessor}"
                self._saw_holder(name, children)
        return blocked

    def _saw_holder(self, name: str, children: list[str]) -> None:
        """Note when the node first in `name`'s queue is another than last seen: a holder
        released it and the next has it, so the lock moves (busy, not stalled), however long
        this claim still waits behind the others queued before it."""
        holder = min(children, key=_sequence)
        if self.holders.get(name, holder) != holder:
            self.moved_at[name] = time.monotonic()
        self.holders[name] = holder

    def _wait_for(self, blocked: dict[str, str], deadline: float) -> None:
        """Until the first blocked name's predecessor goes, the connection changes, or the
        deadline: then the caller checks every queue again."""
        self.woken.clear()
        self.locks.watch_state(self.woken, on=True)
        try:
            predecessor = next(iter(blocked.values()))
            try:
                self.client.get(predecessor, watch=lambda _event: self.woken.set())
            except NoNodeError:
                return  # gone already
            self.woken.wait(max(deadline - time.monotonic(), 0.0))
        finally:
            self.locks.watch_state(self.woken, on=False)

    # --- holding and releasing -------------------------------------------------------------

    def lease(self, names: Iterable[str]) -> Lease:
        chosen = sorted(names)
        interruptions_at = self.interruptions_at
        return Lease(
            tokens={n: self.tokens[n] for n in chosen},
            still_held=lambda: (
                self.locks.interruptions == interruptions_at
                and self.client.state == KazooState.CONNECTED
            ),
            details={n: self.nodes[n] for n in chosen},
        )

    def release(self, names: Iterable[str]) -> None:
        paths = []
        for name in sorted(set(names)):
            if name in self.released:
                continue
            self.released.add(name)
            self.held.discard(name)
            if name in self.nodes:
                paths.append(self.nodes.pop(name))
            elif self.create_tried:
                # A create whose reply was lost may still have made our node.
                self.locks.leave_behind(self.locks.path(name), self.prefix)
        if paths:
            self._delete(paths)

    def _delete(self, paths: list[str]) -> None:
        """One request (a transaction for several). If it fails, the nodes are handed to the
        backend's reaper: a node left behind by a live session would block its queue."""
        try:
            if len(paths) == 1:
                self.client.delete(paths[0])
                return
            transaction = self.client.transaction()
            for path in paths:
                transaction.delete(path)
            if not any(isinstance(r, Exception) for r in transaction.commit()):
                return
        except NoNodeError:
            return  # gone with an expired session
        except (KazooException, KazooTimeoutError) as exc:
            log.warning("zookeeper lock release failed (%r); retried when reconnected", exc)
        for path in paths:
            parent, node = path.rsplit("/", 1)
            self.locks.leave_behind(parent, node)


def _sequence(child: str) -> str:
    """A node's place in its queue (a node of another recipe, without one, goes last)."""
    match = SEQUENCE.search(child)
    return match.group(1) if match else "~"


def _predecessor(children: list[str], ours: str) -> str | None:
    """The contender just ahead of our node, or None if ours is first. Raises if our node is
    not there (the session that created it has expired)."""
    mine = SEQUENCE.search(ours)
    assert mine is not None
    ahead = []
    found = False
    for child in children:
        if child == ours:
            found = True
            continue
        match = SEQUENCE.search(child)
        if match and match.group(1) < mine.group(1):
            ahead.append((match.group(1), child))
    if not found:
        raise SessionExpiredError()
    return max(ahead)[1] if ahead else None
