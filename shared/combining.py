"""Flat combining: the requests of one process that wait for the same lock are served together,
in one lock hold, by one of their own threads.

    combiner = Combiner(run_batch, batch_max=32)
    result = combiner.submit(key, item, timeout)   # from any number of threads

Requests with the same `key` (for the stock service: the sorted lock names) share a lane. The
first request to find its lane idle becomes the lane's leader: it takes itself and whatever else
queued behind it (up to `batch_max`, in arrival order), calls `run_batch(key, items, timeout)`
once, hands each request its own result, and passes the lead to the next request in the queue,
if any. Nobody waits to fill a batch: a lone request runs at once, and whatever queued during a
hold is the next batch. A leader serves one batch and returns, so no thread is kept working for
others indefinitely.

Failures: if `run_batch` raises, every request of that batch gets the exception (the failure is
the hold's, not one request's); it may also answer one request with an exception of its own. A
request still queued when its own timeout runs out leaves the
queue with LockTimeout; one already taken into a batch waits for that batch, whose lock wait is
bounded by the oldest member's timeout.

Why not a library: flat combining (Hendler, Incze, Shavit, Tarjan, 2010) is a pattern, not a
package; concurrent.futures has no notion of "serve everything queued behind me in one call".
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

from shared.locks.base import LockTimeout

Item = TypeVar("Item")
Result = TypeVar("Result")

QUEUED, LEAD, TAKEN, DONE = "queued", "lead", "taken", "done"


class _Pending(Generic[Item, Result]):
    __slots__ = ("deadline", "error", "event", "item", "result", "state")

    def __init__(self, item: Item, deadline: float) -> None:
        self.item = item
        self.deadline = deadline
        self.event = threading.Event()
        self.state = QUEUED
        self.result: Result | None = None
        self.error: BaseException | None = None


class _Lane:
    __slots__ = ("busy", "queue")

    def __init__(self) -> None:
        self.queue: deque[_Pending] = deque()
        self.busy = False  # a leader is running a batch of this lane


# run_batch(key, items, timeout, handle): one result per item, in order, then one per item
# that joined through handle.take(); an item's result may be an exception, raised to that
# item's caller alone. handle.detach() lets the lane's next batch start before this one ends
# (a batch left waiting for a lock that does not come).
RunBatch = Callable[
    [Hashable, Sequence[Item], float, "BatchHandle[Item, Result]"],
    Sequence[Result | BaseException],
]


class Combiner(Generic[Item, Result]):
    def __init__(self, run_batch: RunBatch[Item, Result], batch_max: int) -> None:
        if batch_max < 1:
            raise ValueError("batch_max must be at least 1")
        self.run_batch = run_batch
        self.batch_max = batch_max
        self._lanes: dict[Hashable, _Lane] = {}
        self._guard = threading.Lock()

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
            else:
                lane.busy = True
                pending.state = LEAD
        if pending.state != LEAD:
            self._wait(key, lane, pending)
        if pending.state == LEAD:
            self._lead(key, lane, pending)
        if pending.error is not None:
            raise pending.error
        return pending.result  # type: ignore[return-value]

    def _wait(self, key: Hashable, lane: _Lane, pending: _Pending[Item, Result]) -> None:
        """Until this request's batch is done, or it is handed the lead."""
        while not pending.event.wait(_left(pending.deadline)):
            with self._guard:
                if pending.state == QUEUED:
                    lane.queue.remove(pending)
                    pending.error = _queued_too_long(key, len(lane.queue))
                    return
            # Taken into a running batch (or just handed the lead): that batch answers it.
            pending.deadline = float("inf")

    def _lead(self, key: Hashable, lane: _Lane, first: _Pending[Item, Result]) -> None:
        now = time.monotonic()
        with self._guard:
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
        handle = BatchHandle(self, key, lane, live)
        try:
            if live:
                # The oldest live member's time left bounds the lock wait: nobody waits for
                # the lock past its own timeout.
                timeout = min(m.deadline for m in live) - now
                results = self.run_batch(key, [m.item for m in live], timeout, handle)
                # `live` now also holds the members that joined late, in the order of results.
                for member, result in zip(live, results, strict=True):
                    if isinstance(result, BaseException):
                        member.error = result
                    else:
                        member.result = result
        except BaseException as exc:  # the hold's failure: handed to every member, re-raised there
            for member in live:
                member.error = exc
        finally:
            with self._guard:
                for member in batch + live:
                    member.state = DONE
            handle.detach()
            for member in batch + live:
                if member is not first:
                    member.event.set()

    def _hand_on(self, key: Hashable, lane: _Lane) -> None:
        with self._guard:
            if lane.queue:
                successor = lane.queue.popleft()
                successor.state = LEAD
                successor.event.set()
            else:
                lane.busy = False
                if self._lanes.get(key) is lane:
                    del self._lanes[key]  # idle lanes are not kept: keys are unbounded


class BatchHandle(Generic[Item, Result]):
    """What a running batch may do with its lane: take late joiners, or let the next batch
    start without it."""

    def __init__(
        self,
        combiner: Combiner[Item, Result],
        key: Hashable,
        lane: _Lane,
        members: list[_Pending[Item, Result]],
    ) -> None:
        self._combiner = combiner
        self._key = key
        self._lane = lane
        self._members = members
        self._detached = False

    def take(self, fits: Callable[[Item], bool], limit: int) -> list[Item]:
        """Requests queued since this batch began that `fits` accepts (those its hold can
        serve with no more locks), in arrival order, at most `limit`; they join this batch and
        get their answers from it. The others stay queued for the next batch."""
        if self._detached or limit <= 0:
            return []
        now = time.monotonic()
        joined: list[_Pending[Item, Result]] = []
        with self._combiner._guard:
            for pending in list(self._lane.queue):
                if len(joined) == limit:
                    break
                if pending.deadline > now and fits(pending.item):
                    self._lane.queue.remove(pending)
                    pending.state = TAKEN
                    joined.append(pending)
        self._members.extend(joined)
        return [pending.item for pending in joined]

    def detach(self) -> None:
        """Let the next batch of this lane start while this one still runs (idempotent)."""
        if not self._detached:
            self._detached = True
            self._combiner._hand_on(self._key, self._lane)


def _left(deadline: float) -> float | None:
    return None if deadline == float("inf") else max(deadline - time.monotonic(), 0.0)


def _queued_too_long(key: Hashable, behind: int) -> LockTimeout:
    return LockTimeout(
        f"lock for {key!r} not acquired in time: queued in this process behind {behind} "
        "other request(s) for the same lock"
    )
