"""A batch's members as the combiner keeps them (coordination/combining.py), and the handle a
running batch gets on them and on its lane: their deadlines, an early answer, late joiners, the
rest carried on in a member's thread, the lane let go. Apart from the combiner so that each
stays one job; the handle reaches its combiner only through `Lanes`."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Generic, Protocol, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

# CARRY: a member handed the rest of its batch to run in its own thread (BatchHandle.carry_on).
QUEUED, LEAD, TAKEN, CARRY, DONE = "queued", "lead", "taken", "carry", "done"


class _Pending(Generic[Item, Result]):
    __slots__ = (
        "companions",
        "deadline",
        "deferred",
        "error",
        "event",
        "item",
        "result",
        "state",
        "task",
    )

    def __init__(self, item: Item, deadline: float) -> None:
        self.item = item
        self.deadline = deadline
        self.event = threading.Event()
        self.state = QUEUED
        self.result: Result | None = None
        self.error: BaseException | None = None
        self.deferred = False  # answered later by the task a member carries on
        self.task: Callable[[], None] | None = None
        # How many its batch may wait for, once it leads (Combiner.companion_wait); 0: none.
        self.companions = 0


class Lanes(Protocol):
    """What a handle needs of its combiner: the guard of its lanes, and the lead passed on."""

    _guard: Any

    def _hand_on(self, key: Hashable, lane: Any) -> None: ...


class BatchHandle(Generic[Item, Result]):
    """What a running batch may do with its lane and its members: read their deadlines, answer
    one early, take late joiners, or let the next batch start without it."""

    def __init__(
        self,
        combiner: Lanes | None,
        key: Hashable,
        lane: Any,
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
        get their answers from it. The others stay queued for the next batch.

        This is the batch's last call for members (it holds its lock now), so it then lets the
        next batch of its lane start: that one forms and queues its own claim behind this hold
        while this one decides and commits, and takes the lock as soon as it is released
        (two groups, one committing while the next collects). With a `limit` of 0 (one hold per
        request, kept for comparison) the next waits for this one's end, as it always did."""
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
        self.detach()
        return [pending.item for pending in joined]

    def detach(self) -> None:
        """Let the next batch of this lane start while this one still runs (idempotent, and
        once only from any threads: the order service's watch of long calls may let the lane
        go while the batch ends and lets it go too, and a second hand-on would start two)."""
        if self._combiner is None or self._lane is None:
            return
        with self._combiner._guard:
            if self._detached:
                return
            self._detached = True
        self._combiner._hand_on(self._key, self._lane)


def _settle(member: _Pending[Item, Result], result: Result | BaseException) -> None:
    if isinstance(result, BaseException):
        member.error = result
    else:
        member.result = result
