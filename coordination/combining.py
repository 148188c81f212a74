"""Flat combining: requests of one process that arrive while a batch of their lane is in
flight are served together, as the next batch, by one of their own threads.

    combiner = Combiner(run_batch, batch_max=32)
    result = combiner.submit(key, item, timeout)   # from any number of threads

The first request to find its lane idle leads: it takes whatever queued behind it (up to
`batch_max`, in arrival order), calls `run_batch(key, items, handle)` once, hands each request
its own result, and passes the lead on. Nobody waits to fill a batch. Every request keeps its
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
from typing import Generic, TypeVar

from coordination.locks.base import LockTimeout

Item = TypeVar("Item")
Result = TypeVar("Result")

# CARRY: a member handed the rest of its batch to run in its own thread (BatchHandle.carry_on).
QUEUED, LEAD, TAKEN, CARRY, DONE = "queued", "lead", "taken", "carry", "done"


class _Pending(Generic[Item, Result]):
    __slots__ = ("deadline", "deferred", "error", "event", "item", "result", "state", "task")

    def __init__(self, item: Item, deadline: float) -> None:
        self.item = item
        self.deadline = deadline
        self.event = threading.Event()
        self.state = QUEUED
        self.result: Result | None = None
        self.error: BaseException | None = None
        self.deferred = False  # answered later by the task a member carries on
        self.task: Callable[[], None] | None = None


class _Lane:
    __slots__ = ("busy", "queue")

    def __init__(self) -> None:
        self.queue: deque[_Pending] = deque()
        self.busy = False  # a leader is running a batch of this lane


# run_batch(key, items, handle): a result per item (and per one joined by handle.take()); a
# result may be an exception, raised to that item's caller alone. handle.detach(): the next
# batch may start before this one ends; handle.answer(i, result): item i answered early.
RunBatch = Callable[
    [Hashable, Sequence[Item], "BatchHandle[Item, Result]"],
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
            handle.detach()
            for member in ending:
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
    """What a running batch may do with its lane and its members: read their deadlines, answer
    one early, take late joiners, or let the next batch start without it."""

    def __init__(
        self,
        combiner: Combiner[Item, Result] | None,
        key: Hashable,
        lane: _Lane | None,
        members: list[_Pending[Item, Result]],
        leader: _Pending[Item, Result] | None = None,
    ) -> None:
        self._combiner = combiner
        self._key = key
        self._lane = lane
        self._members = members
        self._leader = leader
        self._detached = combiner is None

    @classmethod
    def alone(cls, item: Item, deadline: float) -> BatchHandle[Item, Result]:
        """For a batch run without a combiner (one request, no lane)."""
        return cls.group([item], [deadline])

    @classmethod
    def group(cls, items: Sequence[Item], deadlines: Sequence[float]) -> BatchHandle[Item, Result]:
        """For a batch that arrived whole (a batched request): its members, no lane; what
        `run_batch` hands on is carried on in the caller's thread (carry_on)."""
        return cls(
            None, None, None, [_Pending(i, d) for i, d in zip(items, deadlines, strict=True)]
        )

    def outcomes(self, results: Sequence[Result | BaseException]) -> list[Result | BaseException]:
        """Each member's result: the one it was answered early with, else the batch's."""
        return [
            (m.error or m.result) if m.state == DONE else r  # type: ignore[misc]
            for m, r in zip(self._members, results, strict=True)
        ]

    @property
    def deadlines(self) -> list[float]:
        """Each member's deadline (time.monotonic()), in the order of the batch's items."""
        return [member.deadline for member in self._members]

    def answer(self, index: int, result: Result | BaseException) -> None:
        """Answer member `index` now; the batch's later result for it is ignored."""
        member = self._members[index]
        guard = self._combiner._guard if self._combiner else threading.Lock()
        with guard:
            if member.state == DONE:
                return
            _settle(member, result)
            member.state = DONE
        if member is not self._leader:
            member.event.set()

    def leads(self, index: int) -> bool:
        """Whether member `index` is the one whose thread runs this batch."""
        return self._members[index] is self._leader

    def carry_on(self, indices: list[int], task: Callable[[], None]) -> None:
        """Members `indices` are answered later by `task` (through answer()), which runs in the
        thread of the first of them, a thread that waits for its answer anyway. So the leader,
        its own request answered, returns at once instead of serving the rest. The batch's
        results for these members are ignored."""
        if self._combiner is None:
            task()  # no other thread to carry it: run it here
            return
        carrier = self._members[indices[0]]
        assert carrier is not self._leader, "the leader carries on by itself"

        def guarded() -> None:
            try:
                task()
            except BaseException as exc:  # whatever the task left unanswered gets its failure
                for i in indices:
                    self.answer(i, exc)

        with self._combiner._guard:
            for i in indices:
                self._members[i].deferred = True
            carrier.task = guarded
            carrier.state = CARRY
        carrier.event.set()

    def take(self, fits: Callable[[Item], bool], limit: int) -> list[Item]:
        """Requests queued since this batch began that `fits` accepts (those its hold can
        serve with no more locks), in arrival order, at most `limit`; they join this batch and
        get their answers from it. The others stay queued for the next batch."""
        if self._detached or limit <= 0 or self._combiner is None or self._lane is None:
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
        if not self._detached and self._combiner is not None and self._lane is not None:
            self._detached = True
            self._combiner._hand_on(self._key, self._lane)


def _settle(member: _Pending[Item, Result], result: Result | BaseException) -> None:
    if isinstance(result, BaseException):
        member.error = result
    else:
        member.result = result


def _left(deadline: float) -> float | None:
    return None if deadline == float("inf") else max(deadline - time.monotonic(), 0.0)


def _queued_too_long(key: Hashable, behind: int) -> LockTimeout:
    return LockTimeout(
        f"lock for {key!r} not acquired in time: queued in this process behind {behind} "
        "other request(s) for the same lock"
    )
