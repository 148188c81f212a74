"""A bounded queue per lock in one stock process: how many of its requests wait for each
goods id's lock, and a newcomer refused at once past LOCK_QUEUE_MAX (LockQueueFull: a 503 naming
the goods id and the lock, with Retry-After, nothing written) instead of joining a queue it
cannot get through in its caller's time. Vitess's hot-row protection does the same: a bounded
FIFO per hot row, a fast refusal past it.

A request counts as a waiter of each of its names from its arrival until its names are held
(its batch serves it) or it is answered without them (its deadline passed, its batch failed).

The queue lengths are published by goods id for the longest queues only (TopGoods): the
process's ten longest at a time, at most a hundred goods ids over its life, the rest summed as
`other`. Prometheus' multiprocess mode cannot remove a series, so a goods id that leaves the
top is set to 0 and its series kept; the life cap bounds how many there are.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from coordination.locks import LockTimeout
from shared.metrics import LOCK_QUEUE_REFUSALS, LOCK_QUEUE_WAITERS

OTHER = "other"
TOP = 10  # goods ids shown by their own label at a time
LABELS = 100  # goods ids ever shown by their own label, per process
SHOWN_AT = 2  # waiters before a goods id is shown: one in flight is no queue
# What a refusal asks the caller to wait: its queue is full behind a stalled or saturated
# holder; a second is many holds of a healthy one (HTTP's Retry-After is in whole seconds).
RETRY_AFTER_SECONDS = 1


class LockQueueFull(LockTimeout):
    """A newcomer refused at once: LOCK_QUEUE_MAX requests of this process already wait for
    the lock of its goods id. Nothing written; its flag is still live, so it is retryable."""

    def __init__(self, lock: str, goods_id: str, waiters: int, backend: str) -> None:
        super().__init__(
            f"{waiters} requests of this process already wait for the {backend} lock {lock!r} "
            f"of goods id {goods_id!r} (LOCK_QUEUE_MAX): not queued, nothing written; "
            f"retry after {RETRY_AFTER_SECONDS} s"
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
    """The waiters of each lock name in this process, bounded by `bound` (None: unbounded).
    `goods_of` names the goods id behind a lock name for the refusal (under LOCK_SCOPE=global
    one name stands for every goods id)."""

    def __init__(self, bound: int | None, backend: str, top: TopGoods | None = None) -> None:
        self.bound = bound
        self.backend = backend
        self.top = top or TopGoods()
        self._waiters: dict[str, int] = {}
        self._joined: dict[int, tuple[str, ...]] = {}  # id(request) -> the names it waits for
        self._guard = threading.Lock()

    def join(self, request: object, names: Iterable[str], goods_ids: Iterable[str]) -> None:
        """Count `request` as a waiter of each of `names`, or raise LockQueueFull (counting
        nothing) if one of them has `bound` waiters already."""
        wanted = tuple(sorted(set(names)))
        goods = tuple(goods_ids)
        with self._guard:
            for name in wanted:
                waiters = self._waiters.get(name, 0)
                if self.bound is not None and waiters >= self.bound:
                    LOCK_QUEUE_REFUSALS.labels(self.top.refusal_label(name)).inc()
                    named = name if name in goods else min(goods, default=name)
                    raise LockQueueFull(name, named, waiters, self.backend)
            for name in wanted:
                before = self._waiters.get(name, 0)
                self._waiters[name] = before + 1
                self.top.changed(name, before, before + 1)
            self._joined[id(request)] = wanted

    def leave(self, request: object) -> None:
        """`request` waits no more (its names held, or it was answered); idempotent."""
        with self._guard:
            names = self._joined.pop(id(request), ())
            for name in names:
                before = self._waiters[name]
                if before > 1:
                    self._waiters[name] = before - 1
                else:
                    del self._waiters[name]
                self.top.changed(name, before, before - 1)

    def waiters(self, name: str) -> int:
        with self._guard:
            return self._waiters.get(name, 0)
