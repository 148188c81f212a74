"""Two groups per lane: once a batch holds its lock and has taken its late joiners
(BatchHandle.take), the next batch forms and queues its claim while this one commits, so the
lock passes from one hold to the next with no idle gap. A fake lock stands for the lock
service: a FIFO of claims, the head holding."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Hashable, Sequence
from functools import partial

from coordination.combining import BatchHandle, Combiner
from tests.waiting import wait_for


class FifoLock:
    """A lock whose claims queue in arrival order, as ZooKeeper's recipe's do, and which
    records when each claim was queued, held and released."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queue: list[object] = []
        self.events: list[tuple[str, int, float]] = []

    def claim(self, batch: int) -> object:
        ticket = object()
        with self._cond:
            self._queue.append(ticket)
            self.events.append(("queued", batch, time.monotonic()))
        return ticket

    def wait(self, ticket: object, batch: int) -> None:
        with self._cond:
            assert self._cond.wait_for(lambda: self._queue[0] is ticket, 10)
            self.events.append(("held", batch, time.monotonic()))

    def release(self, ticket: object, batch: int) -> None:
        with self._cond:
            self._queue.remove(ticket)
            self.events.append(("released", batch, time.monotonic()))
            self._cond.notify_all()


class Holder:
    """A batch runner shaped like stock_service/deduction/holds.py's: claim, wait, take late
    joiners, decide and commit (here: block until told, for the first batch), release."""

    def __init__(self, lock: FifoLock, batch_max: int = 8) -> None:
        self.lock = lock
        self.batch_max = batch_max
        self.batches: list[list[int]] = []
        self.first_committing = threading.Event()
        self.commit_first = threading.Event()

    def __call__(
        self, key: Hashable, items: Sequence[int], handle: BatchHandle[int, object]
    ) -> list[object]:
        number = len(self.batches)
        self.batches.append(list(items))
        ticket = self.lock.claim(number)
        try:
            self.lock.wait(ticket, number)
            items = [*items, *handle.take(lambda item: True, self.batch_max - len(items))]
            self.batches[number] = list(items)
            if number == 0:
                self.first_committing.set()
                assert self.commit_first.wait(10)
            return [item * 10 for item in items]
        finally:
            self.lock.release(ticket, number)


def submit(
    combiner: Combiner[int, object], item: int, results: dict[int, object]
) -> threading.Thread:
    def one() -> None:
        try:
            results[item] = combiner.submit("k", item, timeout=10)
        except Exception as exc:
            results[item] = exc

    thread = threading.Thread(target=one, name=f"req-{item}")
    thread.start()
    return thread


def _backlog_is(combiner: Combiner[int, object], backlog: tuple[bool, int]) -> bool:
    return combiner.backlog("k") == backlog


def _when(lock: FifoLock, what: str, batch: int) -> float:
    return next(t for w, b, t in lock.events if (w, b) == (what, batch))


def test_the_next_batch_queues_its_claim_while_the_one_before_commits() -> None:
    lock = FifoLock()
    holder = Holder(lock)
    combiner = Combiner[int, object](holder, batch_max=8)
    results: dict[int, object] = {}
    threads = [submit(combiner, 1, results)]
    assert holder.first_committing.wait(5)
    # The first batch holds the lock and commits: the next request leads a batch at once,
    # its claim queued behind the hold, and later ones join it when it holds the lock.
    threads.append(submit(combiner, 2, results))
    wait_for(lambda: any(e[:2] == ("queued", 1) for e in lock.events), "the next claim queued")
    for item, behind in ((3, 1), (4, 2)):
        threads.append(submit(combiner, item, results))
        wait_for(partial(_backlog_is, combiner, (True, behind)), f"{item} queued")
    holder.commit_first.set()
    for thread in threads:
        thread.join(10)
    assert results == {1: 10, 2: 20, 3: 30, 4: 40}
    assert holder.batches == [[1], [2, 3, 4]]
    # The second claim was in the queue before the first hold ended: it held on the release.
    assert _when(lock, "queued", 1) < _when(lock, "released", 0) <= _when(lock, "held", 1)


def test_one_hold_per_request_still_waits_for_the_one_before_to_end() -> None:
    """batch_max=1 (the comparison the bench keeps): nothing joins, and the next batch starts
    only once this one has released its lock, as before."""
    lock = FifoLock()
    holder = Holder(lock, batch_max=1)
    combiner = Combiner[int, object](holder, batch_max=1)
    results: dict[int, object] = {}
    threads = [submit(combiner, 1, results)]
    assert holder.first_committing.wait(5)
    threads.append(submit(combiner, 2, results))
    wait_for(lambda: combiner.backlog("k") == (True, 1), "2 queued")
    time.sleep(0.05)
    assert [e[:2] for e in lock.events] == [("queued", 0), ("held", 0)]
    holder.commit_first.set()
    for thread in threads:
        thread.join(10)
    assert results == {1: 10, 2: 20}
    assert _when(lock, "released", 0) < _when(lock, "queued", 1)


def test_many_callers_are_served_once_each_and_holds_never_overlap() -> None:
    lock = FifoLock()
    holder = Holder(lock, batch_max=4)
    holder.commit_first.set()
    combiner = Combiner[int, object](holder, batch_max=4)
    results: dict[int, object] = {}

    def one(item: int) -> None:
        results[item] = combiner.submit("k", item, timeout=10)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(60)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert results == {i: i * 10 for i in range(60)}
    assert sorted(i for batch in holder.batches for i in batch) == list(range(60))
    assert all(len(batch) <= 4 for batch in holder.batches)
    held = [(b, t) for w, b, t in lock.events if w == "held"]
    released = {b: t for w, b, t in lock.events if w == "released"}
    for (batch, _), (_, next_start) in itertools.pairwise(held):
        assert released[batch] <= next_start  # one hold at a time
