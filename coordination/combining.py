"""Flat combining: requests of one process that arrive while a batch of their lane is in
flight are served together, as the next batch, by one of their own threads.

    combiner = Combiner(run_batch, batch_max=32)
    result = combiner.submit(key, item, timeout)   # from any number of threads

The first request to find its lane idle leads: it takes whatever queued behind it (up to
`batch_max`, in arrival order), calls `run_batch(key, items, handle)` once, hands each request
its own result, and passes the lead on. With `companion_wait` (the order service's
ORDER_BATCH_WAIT_MS), a leader may wait up to that long for companions: one handed the lead
after queueing behind a batch, for those queued with it and the callers of the batch that just
ended (under a steady load they come back within a few milliseconds, and taking them makes one
batch of what would be two); one that finds its lane idle within that time of a batch's end,
for as many as that batch served (else the first caller back runs a batch of one while the
others queue behind it). It stops once they are there, or `batch_max`, and never waits into its
own deadline. A lone request, with no batch in that time, never waits. Every request keeps its
own deadline (a request still queued when it passes leaves with LockTimeout); `handle.answer`
answers one early; if `run_batch` raises, every request not yet answered gets the exception.
The stock service combines deductions waiting for a lock (one hold, one commit); the order
service combines orders (one transaction, one pipeline, one stock call). docs/combining.md
tells why and what it gains. Why not a library: flat combining (Hendler, Incze, Shavit,
Tarjan, 2010) is a pattern; concurrent.futures has no "serve everything queued behind me".
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from typing import Generic

from coordination.batch_handle import (
    DONE,
    LEAD,
    QUEUED,
    TAKEN,
    BatchHandle,
    Item,
    Result,
    _Pending,
    _settle,
)
from coordination.locks.base import LockTimeout

__all__ = ["BatchHandle", "Combiner", "RunBatch"]


class _Lane:
    __slots__ = ("busy", "queue")

    def __init__(self) -> None:
        self.queue: deque[_Pending] = deque()
        self.busy = False  # a leader is running a batch of this lane


# run_batch(key, items, handle): a result per item (and per one joined by handle.take()); a
# result may be an exception, raised to that item's caller alone. handle.detach(): the next
# batch may start before this one ends (handle.take() does it once the batch holds its lock:
# two groups, one committing while the next collects); handle.answer(i, result): item i
# answered early.
RunBatch = Callable[
    [Hashable, Sequence[Item], BatchHandle[Item, Result]],
    Sequence[Result | BaseException],
]


class Combiner(Generic[Item, Result]):
    def __init__(
        self, run_batch: RunBatch[Item, Result], batch_max: int, companion_wait: float = 0.0
    ) -> None:
        if batch_max < 1:
            raise ValueError("batch_max must be at least 1")
        if companion_wait < 0:
            raise ValueError("companion_wait must be at least 0")
        self.run_batch = run_batch
        self.batch_max = batch_max
        self.companion_wait = companion_wait
        self._lanes: dict[Hashable, _Lane] = {}
        self._guard = threading.Lock()
        self._arrived = threading.Condition(self._guard)  # a request queued on some lane
        # Per lane, when its last batch ended and how many it served (with companion_wait).
        self._last: dict[Hashable, tuple[float, int]] = {}

    def backlog(self, key: Hashable) -> tuple[bool, int]:
        """Whether a batch of this lane is running, and how many requests queue behind it."""
        with self._guard:
            lane = self._lanes.get(key)
            return (lane.busy, len(lane.queue)) if lane else (False, 0)

    def submit(self, key: Hashable, item: Item, timeout: float) -> Result:
        pending: _Pending[Item, Result] = _Pending(item, time.monotonic() + timeout)
        with self._guard:
            lane = self._lanes.get(key)
            if lane is None:
                lane = self._lanes[key] = _Lane()
            if lane.busy:
                lane.queue.append(pending)
                if self.companion_wait:
                    self._arrived.notify_all()
            else:
                lane.busy = True
                pending.state = LEAD
                pending.companions = self._returning(key)
        if pending.state != LEAD:
            self._wait(key, lane, pending)
        if pending.state == LEAD:
            self._lead(key, lane, pending)
        if pending.error is not None:
            raise pending.error
        return pending.result  # type: ignore[return-value]

    def _wait(self, key: Hashable, lane: _Lane, pending: _Pending[Item, Result]) -> None:
        """Until this request is answered, or handed the lead (its deadline unchanged: the
        lead's batch answers it LockTimeout at once if its time is up)."""
        timeout = _left(pending.deadline)
        while True:
            if not pending.event.wait(timeout):
                with self._guard:
                    if pending.state == QUEUED:
                        lane.queue.remove(pending)
                        pending.error = _queued_too_long(key, len(lane.queue))
                        return
                # Taken into a running batch, or just handed the lead: either sets the event.
                timeout = None
                continue
            with self._guard:
                task, pending.task = pending.task, None
                if task is not None:
                    pending.event.clear()
                    pending.state = TAKEN
            if task is None:
                return
            task()  # the rest of a batch, carried on in this thread; it answers this one too
            timeout = None

    def _lead(self, key: Hashable, lane: _Lane, first: _Pending[Item, Result]) -> None:
        with self._guard:
            if first.companions > 1:
                self._await_companions(lane, first)
            now = time.monotonic()
            batch = [first]
            while lane.queue and len(batch) < self.batch_max:
                batch.append(lane.queue.popleft())
            for member in batch:
                member.state = TAKEN
        # A member whose own time ran out while it queued is answered alone; the others are
        # not failed for it.
        for member in batch:
            if member.deadline <= now:
                member.error = _queued_too_long(key, len(batch) - 1)
        live = [m for m in batch if m.deadline > now]
        handle = BatchHandle(self, key, lane, live, first)
        try:
            if live:
                results = self.run_batch(key, [m.item for m in live], handle)
                # `live` now also holds the members that joined late, in the order of results.
                for member, result in zip(live, results, strict=True):
                    if member.state != DONE and not member.deferred:
                        _settle(member, result)
        except BaseException as exc:  # the hold's failure: handed to every member, re-raised there
            for member in live:
                if member.state != DONE and not member.deferred:
                    member.error = exc
        finally:
            with self._guard:
                ending = [m for m in batch + live if not m.deferred and m.state != DONE]
                for member in ending:
                    member.state = DONE
                if self.companion_wait:
                    self._ended(key, len(live))
            handle.detach()
            for member in ending:
                if member is not first:
                    member.event.set()

    def _await_companions(self, lane: _Lane, first: _Pending[Item, Result]) -> None:
        """Hold the lead up to `companion_wait` until `first.companions` are queued (at most
        `batch_max`), and stop as far before the leader's own deadline (it must not time out
        for the wait). Called with the guard held; waiting releases it."""
        now = time.monotonic()
        until = min(now + self.companion_wait, first.deadline - self.companion_wait)
        while len(lane.queue) + 1 < min(first.companions, self.batch_max):
            left = until - time.monotonic()
            if left <= 0:
                return
            self._arrived.wait(left)

    def _ended(self, key: Hashable, served: int) -> None:
        """A batch of this lane ended (guard held): the requests it answers will be back."""
        now = time.monotonic()
        if len(self._last) > 64:  # keys are unbounded: keep only batches of the last wait
            self._last = {k: v for k, v in self._last.items() if now - v[0] < self.companion_wait}
        self._last[key] = (now, served)

    def _returning(self, key: Hashable) -> int:
        """How many a request leading an idle lane may wait for (guard held): under a steady
        load a batch just ended (within the wait) and its callers are coming back; a lone
        request, with no batch in that time, never waits."""
        ended, served = self._last.get(key, (float("-inf"), 0))
        return served if time.monotonic() - ended < self.companion_wait else 0

    def _hand_on(self, key: Hashable, lane: _Lane) -> None:
        with self._guard:
            if lane.queue:
                successor = lane.queue.popleft()
                successor.state = LEAD
                # Those queued with it, and the callers of the batch that just ended.
                successor.companions = len(lane.queue) + 1 + self._last.get(key, (0, 0))[1]
                successor.event.set()
            else:
                lane.busy = False
                if self._lanes.get(key) is lane:
                    del self._lanes[key]  # idle lanes are not kept: keys are unbounded


def _left(deadline: float) -> float | None:
    return None if deadline == float("inf") else max(deadline - time.monotonic(), 0.0)


def _queued_too_long(key: Hashable, behind: int) -> LockTimeout:
    return LockTimeout(
        f"lock for {key!r} not acquired in time: queued in this process behind {behind} "
        "other request(s) for the same lock"
    )
