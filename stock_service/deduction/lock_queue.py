"""A bounded queue per lock in one stock process: how many of its requests wait for each
goods id's lock, and a newcomer refused at once past LOCK_QUEUE_MAX (LockQueueFull: a 503 naming
the goods id and the lock, with Retry-After, nothing written) instead of joining a queue it
cannot get through in its caller's time. Vitess's hot-row protection does the same: a bounded
FIFO per hot row, a fast refusal past it.

A request counts as a waiter of each of its names from its arrival until its names are held
(its batch serves it) or it is answered without them (its deadline passed, its batch failed).

A waiting request also holds its thread, and a process has few (gunicorn's gthread worker: 8 on
the cluster), while its worker goes on accepting connections and queues their requests for a
free thread. So one stalled lock (a holder stuck elsewhere) whose buyers keep coming would take
every thread for their callers' whole timeout, and a request for any other goods id would wait
in that queue just as long (the chaos fault stall-lock-holder found it: buyers of free goods ids
answered after the 4 s call timeout). So the threads that wait for one lock are bounded, to
half the process's (server_threads.py), once it is stalled: one of them has waited
`stalled_after` (the batch's patience, after which a batch treats a name as held elsewhere)
and the lock was not seen to move meanwhile, or a request waited out its time for it
(mark_stalled) and none had it since. A newcomer's thread past it is refused at once, as past
LOCK_QUEUE_MAX, and the process keeps the other threads for the other goods ids. And once a
lock is so marked, a request naming it beside other names is refused at once: it would hold
those (another hot goods id's) while it waits.

A stalled lock is one that does not move, not one slow to come: a hot lock on a loaded
machine (two shared cores beside a chaos run, a hold of a hundred lines taking a second) keeps
its waiters well past the patience, and a lock queue's length says nothing of its holder. So a
lock is seen to move when a request of this process gets it, or when a waiting claim sees
its holder change (`moved`, from Claim.moved_at, where the backend can tell: ZooKeeper's
queue); a waiter that leaves without it marks it stalled only if it did not move while that
waiter waited. And for the mark, which refuses for seconds every request naming the lock
beside others, "long" is measured against the holds: the lock must not have moved for twice
the longest of this process's recent holds (at least `stalled_after`). On a quiet machine a
hold takes 10-30 ms and the patience rules, as before; beside a chaos run a hold of a
hundred-line batch took up to 1.2 s, and a batched call's waiter, answered after its 1 s
budget, had marked a lock stalled that was merely between two such holds, which refused every
hundred-line order naming it for seconds at a time (17 of 96 left PENDING). The thread bound
keeps the patience: it refuses only a thread past half the process's, and late costs the
other goods ids' buyers their threads (measured: a chaos run's buyers of other goods ids
waited 5.1 s beside a stall the bound had waited out two holds for).

The queue lengths are published by goods id for the longest queues only (TopGoods): the
process's ten longest at a time, at most a hundred goods ids over its life, the rest summed as
`other`. Prometheus' multiprocess mode cannot remove a series, so a goods id that leaves the
top is set to 0 and its series kept; the life cap bounds how many there are.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterable
from typing import NoReturn

from coordination.locks import LockTimeout
from shared.metrics import LOCK_QUEUE_REFUSALS, LOCK_QUEUE_WAITERS

OTHER = "other"
TOP = 10  # goods ids shown by their own label at a time
LABELS = 100  # goods ids ever shown by their own label, per process
SHOWN_AT = 2  # waiters before a goods id is shown: one in flight is no queue
# How long a lock stays marked stalled after a request waited out its time for it: a mark that
# outlived its stall would refuse for ever the requests that name it beside others (a big
# order's goods ids, only ever asked for together, after a fault had their waiters time out).
STALLED_MARK = 2.0
# What a refusal asks the caller to wait: its queue is full behind a stalled or saturated
# holder; a second is many holds of a healthy one (HTTP's Retry-After is in whole seconds).
RETRY_AFTER_SECONDS = 1
# How many goods ids' last moves are kept before those older than every waiter are forgotten.
MOVES_KEPT = 1000
# The recent holds a stall is measured against (their longest, twice), and that factor.
HOLDS_KEPT = 20
STALL_HOLDS = 2.0


class LockQueueFull(LockTimeout):
    """A newcomer refused at once: LOCK_QUEUE_MAX requests of this process already wait for
    the lock of its goods id. Nothing written; its flag is still live, so it is retryable."""

    def __init__(
        self, lock: str, goods_id: str, waiters: int, backend: str, threads: bool = False
    ) -> None:
        who = (
            f"{waiters} threads of this process already wait for the stalled"
            if threads
            else f"{waiters} requests of this process already wait for the"
        )
        bound = "half its threads" if threads else "LOCK_QUEUE_MAX"
        super().__init__(
            f"{who} {backend} lock {lock!r} of goods id {goods_id!r} ({bound}): not queued, "
            f"nothing written; retry after {RETRY_AFTER_SECONDS} s"
        )
        self.lock = lock
        self.goods_id = goods_id
        self.backend = backend
        self.retry_after = RETRY_AFTER_SECONDS

    def answer(self) -> str:
        return f"lock queue full: {self}"


class TopGoods:
    """Which goods ids the waiters gauge shows by their own label (the longest queues, at most
    `top` at a time and `labels` over the process's life); the rest are summed as `other`.
    Called under LockQueues' guard."""

    def __init__(self, top: int = TOP, labels: int = LABELS) -> None:
        self.top = top
        self.labels = labels
        self.shown: dict[str, int] = {}  # goods id -> its waiters, under its own label
        self.labelled: set[str] = set()  # every goods id shown so far (their series live on)
        self.other = 0  # the waiters of goods ids not shown

    def changed(self, name: str, before: int, after: int) -> None:
        if name in self.shown:
            if after:
                self.shown[name] = after
            else:
                del self.shown[name]
            LOCK_QUEUE_WAITERS.labels(name).set(after)
            return
        if after > before and after >= SHOWN_AT and self._make_room(name, after):
            self.other -= before
            self.shown[name] = after
            self.labelled.add(name)
            LOCK_QUEUE_WAITERS.labels(name).set(after)
        else:
            self.other += after - before
        LOCK_QUEUE_WAITERS.labels(OTHER).set(self.other)

    def _make_room(self, name: str, waiters: int) -> bool:
        """Whether `name` may be shown now, moving the shortest shown queue to `other` if the
        top is full and shorter than this one."""
        if name not in self.labelled and len(self.labelled) >= self.labels:
            return False
        if len(self.shown) < self.top:
            return True
        shortest = min(self.shown, key=self.shown.__getitem__)
        if self.shown[shortest] >= waiters:
            return False
        self.other += self.shown.pop(shortest)
        LOCK_QUEUE_WAITERS.labels(shortest).set(0)
        return True

    def refusal_label(self, name: str) -> str:
        """A refusal's label: its goods id's (a refused goods id's queue is full: as hot as one
        gets) while the process's labels last, else `other`."""
        if name not in self.labelled and len(self.labelled) < self.labels:
            self.labelled.add(name)
        return name if name in self.labelled else OTHER


class LockQueues:
    """The waiters of each lock name in this process, bounded by `bound` (None: unbounded);
    and the threads they hold, bounded by `thread_bound` per name once one of them has waited
    `stalled_after` seconds (None: unbounded). A refusal names the goods id behind the lock
    name (under LOCK_SCOPE=global one name stands for every goods id)."""

    def __init__(
        self,
        bound: int | None,
        backend: str,
        top: TopGoods | None = None,
        thread_bound: int | None = None,
        stalled_after: float = 0.1,
    ) -> None:
        self.bound = bound
        self.backend = backend
        self.top = top or TopGoods()
        self.thread_bound = thread_bound
        self.stalled_after = stalled_after
        self._waiters: dict[str, int] = {}
        # id(request) -> the names it waits for, the thread it waits in, and since when
        self._joined: dict[int, tuple[tuple[str, ...], int, float]] = {}
        # name -> thread -> (its requests waiting for the name, since when the first)
        self._threads: dict[str, dict[int, tuple[int, float]]] = {}
        # The names a request waited `stalled_after` for and left without: stalled until a
        # request of this process has them again. The threads that waited that long leave at
        # their callers' deadlines (a batched call's at its budget), and the next ones, young,
        # are not let take every thread again
        self._stalled: dict[str, float] = {}  # name -> until when (time.monotonic())
        # name -> when it was last seen to move: had by a request of this process, or its
        # holder seen to change by a waiting claim (time.monotonic())
        self._moved: dict[str, float] = {}
        self._prune_moves_at = MOVES_KEPT
        self._holds: deque[float] = deque(maxlen=HOLDS_KEPT)  # seconds, the latest holds
        self._guard = threading.Lock()

    def join(self, request: object, names: Iterable[str], goods_ids: Iterable[str]) -> None:
        """Count `request` as a waiter of each of `names`, or raise LockQueueFull (counting
        nothing) if one of them has `bound` waiters already."""
        wanted = tuple(sorted(set(names)))
        goods = tuple(goods_ids)
        thread = threading.get_ident()
        now = time.monotonic()
        with self._guard:
            for name in wanted:
                waiters = self._waiters.get(name, 0)
                if self.bound is not None and waiters >= self.bound:
                    self._refuse(name, goods, waiters)
                if self._threads_full(name, thread, now) or self._hostage(wanted, name):
                    self._refuse(name, goods, len(self._threads.get(name, ())), threads=True)
            for name in wanted:
                before = self._waiters.get(name, 0)
                self._waiters[name] = before + 1
                self.top.changed(name, before, before + 1)
                mine = self._threads.setdefault(name, {})
                count, since = mine.get(thread, (0, now))
                mine[thread] = (count + 1, since)
            self._joined[id(request)] = (wanted, thread, now)

    def _threads_full(self, name: str, thread: int, now: float) -> bool:
        """Whether a new thread may not wait for `name`: `thread_bound` threads wait for it
        already, and it is stalled: one of them has waited `stalled_after` or longer, or a
        request waited out its time for it and none had it since."""
        waiting = self._threads.get(name)
        if self.thread_bound is None or not waiting or thread in waiting:
            return False
        if len(waiting) < self.thread_bound:
            return False
        oldest = min(since for _, since in waiting.values())
        if self._stalled.get(name, 0.0) > now:
            return True
        return now - oldest >= self.stalled_after and self._moved.get(name, -1.0) < oldest

    def _stall_after(self) -> float:
        """How long a lock must not move to be marked stalled: twice this process's longest
        recent hold, at least `stalled_after`. Called under the guard."""
        return max(self.stalled_after, STALL_HOLDS * max(self._holds, default=0.0))

    def held_for(self, seconds: float) -> None:
        """A hold of this process lasted `seconds` (its read-check-write and commit)."""
        with self._guard:
            self._holds.append(seconds)

    def _hostage(self, wanted: tuple[str, ...], name: str) -> bool:
        """Whether a request of several names would hold the others while it waits for `name`,
        stalled: the other buyers of those would queue behind it (a hot goods id's, beside
        the stalled one, each such claim holding it up to partial_hold). Refused at once. Only
        once a request left without `name` (its deadline, budget or partial_hold over): a
        lock merely slow to come (a busy hot goods id's) refuses nobody."""
        if self.thread_bound is None or len(wanted) < 2:
            return False
        return self._stalled.get(name, 0.0) > time.monotonic()

    def _refuse(
        self, name: str, goods: tuple[str, ...], waiters: int, threads: bool = False
    ) -> NoReturn:
        LOCK_QUEUE_REFUSALS.labels(self.top.refusal_label(name)).inc()
        named = name if name in goods else min(goods, default=name)
        raise LockQueueFull(name, named, waiters, self.backend, threads)

    def leave(self, request: object, held: bool = False) -> None:
        """`request` waits no more: its names `held`, or it was answered without them;
        idempotent."""
        with self._guard:
            names, thread, _ = self._joined.pop(id(request), ((), 0, 0.0))
            for name in names:
                before = self._waiters[name]
                if before > 1:
                    self._waiters[name] = before - 1
                else:
                    del self._waiters[name]
                self.top.changed(name, before, before - 1)
                mine = self._threads[name]
                count, since = mine[thread]
                if held:
                    self._stalled.pop(name, None)
                    self._moved[name] = time.monotonic()
                if count > 1:
                    mine[thread] = (count - 1, since)
                elif len(mine) > 1:
                    del mine[thread]
                else:
                    del self._threads[name]
            if len(self._moved) >= self._prune_moves_at:
                self._forget_old_moves()

    def moved(self, seen: dict[str, float]) -> None:
        """A waiting claim saw these names' holders change (name -> when): they move."""
        if not seen:
            return
        with self._guard:
            for name, when in seen.items():
                if when > self._moved.get(name, -1.0):
                    self._moved[name] = when
            if len(self._moved) >= self._prune_moves_at:
                self._forget_old_moves()

    def _forget_old_moves(self) -> None:
        """Moves older than every waiter's arrival decide nothing (each check compares a move
        with a waiter's arrival): forgotten, so the goods ids of a long life are not all kept.
        Called under the guard, when the map has doubled since the last time."""
        oldest = min((t for _, _, t in self._joined.values()), default=time.monotonic())
        self._moved = {n: t for n, t in self._moved.items() if t >= oldest}
        self._prune_moves_at = max(MOVES_KEPT, 2 * len(self._moved))

    def mark_stalled(self, names: Iterable[str], request: object = None) -> None:
        """`request` waited out its time for `names` and left without them: stalled for
        STALLED_MARK s (each such request marks it again), or until a request of this process
        has them (leave with `held`). Only the names it lacked: a name it held meanwhile (a hot
        goods id beside the stalled one) is no stalled one; nor one seen to move while it
        waited (a busy lock, its turn not come)."""
        now = time.monotonic()
        with self._guard:
            if len(self._stalled) >= LABELS:  # many marked: forget those past
                self._stalled = {n: t for n, t in self._stalled.items() if t > now}
            joined = self._joined.get(id(request))
            if joined is None:  # a waiter not counted here: taken at its word
                still = list(names)
            else:  # not moved since it came, nor for long enough: stalled
                since, quiet = joined[2], now - self._stall_after()
                still = [n for n in names if self._moved.get(n, -1.0) < since <= quiet]
            self._stalled.update(dict.fromkeys(still, now + STALLED_MARK))

    def waiters(self, name: str) -> int:
        with self._guard:
            return self._waiters.get(name, 0)

    def threads(self, name: str) -> int:
        """The threads of this process whose requests wait for `name`."""
        with self._guard:
            return len(self._threads.get(name, {}))
