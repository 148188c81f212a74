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
`stalled_after` (the batch's patience, after which a batch treats a name as held elsewhere), or
a request waited out its time for it (mark_stalled) and none had it since. A newcomer's thread
past it is refused at once, as past LOCK_QUEUE_MAX, and the process keeps the other threads for
the other goods ids. A healthy hot lock is not bounded so: its waiters are served within a hold
or two, within the patience. And once a lock is so marked, a request naming it beside other
names is refused at once: it would hold those (another hot goods id's) while it waits.

The queue lengths are published by goods id for the longest queues only (TopGoods): the
process's ten longest at a time, at most a hundred goods ids over its life, the rest summed as
`other`. Prometheus' multiprocess mode cannot remove a series, so a goods id that leaves the
top is set to 0 and its series kept; the life cap bounds how many there are.
"""

from __future__ import annotations

import threading
import time
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
        # id(request) -> the names it waits for, and the thread it waits in
        self._joined: dict[int, tuple[tuple[str, ...], int]] = {}
        # name -> thread -> (its requests waiting for the name, since when the first)
        self._threads: dict[str, dict[int, tuple[int, float]]] = {}
        # The names a request waited `stalled_after` for and left without: stalled until a
        # request of this process has them again. The threads that waited that long leave at
        # their callers' deadlines (a batched call's at its budget), and the next ones, young,
        # are not let take every thread again
        self._stalled: dict[str, float] = {}  # name -> until when (time.monotonic())
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
            self._joined[id(request)] = (wanted, thread)

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
        return self._stalled.get(name, 0.0) > now or now - oldest >= self.stalled_after

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
            names, thread = self._joined.pop(id(request), ((), 0))
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
                if count > 1:
                    mine[thread] = (count - 1, since)
                elif len(mine) > 1:
                    del mine[thread]
                else:
                    del self._threads[name]

    def mark_stalled(self, names: Iterable[str]) -> None:
        """A request waited out its time for `names` and left without them: stalled for
        STALLED_MARK s (each such request marks it again), or until a request of this process
        has them (leave with `held`). Only the names it lacked: a name it held meanwhile (a hot
        goods id beside the stalled one) is no stalled one."""
        now = time.monotonic()
        with self._guard:
            if len(self._stalled) >= LABELS:  # many marked: forget those past
                self._stalled = {n: t for n, t in self._stalled.items() if t > now}
            self._stalled.update(dict.fromkeys(names, now + STALLED_MARK))

    def waiters(self, name: str) -> int:
        with self._guard:
            return self._waiters.get(name, 0)

    def threads(self, name: str) -> int:
        """The threads of this process whose requests wait for `name`."""
        with self._guard:
            return len(self._threads.get(name, {}))
