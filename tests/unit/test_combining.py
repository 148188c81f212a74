"""Flat combining with a fake batch runner: who runs, what is batched, who gets which answer."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import pytest

from coordination import combining
from coordination.combining import BatchHandle, Combiner
from coordination.locks import LockTimeout
from tests.waiting import wait_for


class Recorder:
    """A batch runner that records its batches and, for the first batch, blocks until told:
    that is how the tests make requests queue behind a running batch."""

    def __init__(self, block_first: bool = True) -> None:
        self.batches: list[list[int]] = []
        self.threads: list[str] = []
        self.first_running = threading.Event()
        self.go_on = threading.Event()
        if not block_first:
            self.go_on.set()
        self.answer: Callable[[int], object] = lambda item: item * 10

    def __call__(
        self, key: Hashable, items: Sequence[int], handle: BatchHandle[int, object]
    ) -> list[object]:
        self.batches.append(list(items))
        self.threads.append(threading.current_thread().name)
        if len(self.batches) == 1:
            self.first_running.set()
            assert self.go_on.wait(10)
        return [self.answer(item) for item in items]


def is_in(
    combiner: Combiner[int, object],
    results: dict[int, object],
    item: int,
    arrived: tuple[bool, int],
) -> bool:
    return item in results or combiner.backlog("k") == arrived


def submit_in_order(
    combiner: Combiner[int, object], items: list[int]
) -> tuple[dict[int, object], list[threading.Thread]]:
    """Submit items from threads of their own, each once the one before has queued."""
    results: dict[int, object] = {}

    def one(item: int) -> None:
        try:
            results[item] = combiner.submit("k", item, timeout=10)
        except Exception as exc:
            results[item] = exc

    threads = []
    for item in items:
        # The order of arrival is what the tests check (who leads, what each batch holds), so
        # the next request starts only once this one is in: leading an idle lane, or queued
        # behind the running batch (or answered already).
        busy, queued = combiner.backlog("k")
        arrived = (True, queued + 1) if busy else (True, 0)
        thread = threading.Thread(target=one, args=(item,), name=f"req-{item}")
        thread.start()
        threads.append(thread)
        wait_for(partial(is_in, combiner, results, item, arrived), f"request {item} in the lane")
    return results, threads


def test_a_lone_request_is_served_at_once_in_a_batch_of_its_own() -> None:
    runner = Recorder(block_first=False)
    assert Combiner[int, object](runner, batch_max=8).submit("k", 4, timeout=1) == 40
    assert runner.batches == [[4]]


def test_requests_that_queue_during_a_batch_are_the_next_batch_in_arrival_order() -> None:
    runner = Recorder()
    combiner = Combiner[int, object](runner, batch_max=8)
    results, threads = submit_in_order(combiner, [1])
    assert runner.first_running.wait(5)
    more, more_threads = submit_in_order(combiner, [2, 3, 4])
    runner.go_on.set()
    for thread in threads + more_threads:
        thread.join(10)
    assert runner.batches == [[1], [2, 3, 4]]
    assert {**results, **more} == {1: 10, 2: 20, 3: 30, 4: 40}
    # The next batch is led by one of its own requests: the first one's thread went home.
    assert runner.threads == ["req-1", "req-2"]


def test_the_batch_size_is_capped_and_one_gives_one_request_per_batch() -> None:
    for cap, expected in ((2, [[1], [2, 3], [4, 5]]), (1, [[1], [2], [3], [4], [5]])):
        runner = Recorder()
        combiner = Combiner[int, object](runner, batch_max=cap)
        _, first = submit_in_order(combiner, [1])
        assert runner.first_running.wait(5)
        _, rest = submit_in_order(combiner, [2, 3, 4, 5])
        runner.go_on.set()
        for thread in first + rest:
            thread.join(10)
        assert runner.batches == expected


def test_a_failure_of_the_batch_reaches_each_of_its_requests_and_no_other() -> None:
    runner = Recorder()
    combiner = Combiner[int, object](runner, batch_max=8)
    _, first = submit_in_order(combiner, [1])
    assert runner.first_running.wait(5)
    results, rest = submit_in_order(combiner, [2, 3])

    def fail(item: int) -> object:
        raise ConnectionError("database down")

    runner.answer = fail
    runner.go_on.set()
    for thread in first + rest:
        thread.join(10)
    assert all(isinstance(results[i], ConnectionError) for i in (2, 3))
    runner.answer = lambda item: item
    assert combiner.submit("k", 9, timeout=1) == 9  # the lane is free again


def test_an_answer_that_is_an_exception_goes_to_its_request_alone() -> None:
    runner = Recorder()
    runner.answer = lambda item: LockTimeout("not in time") if item == 3 else item
    combiner = Combiner[int, object](runner, batch_max=8)
    _, first = submit_in_order(combiner, [1])
    assert runner.first_running.wait(5)
    results, rest = submit_in_order(combiner, [2, 3, 4])
    runner.go_on.set()
    for thread in first + rest:
        thread.join(10)
    assert results[2] == 2 and results[4] == 4
    assert isinstance(results[3], LockTimeout)


def test_a_request_still_queued_at_its_deadline_times_out_alone() -> None:
    runner = Recorder()
    combiner = Combiner[int, object](runner, batch_max=8)
    _, first = submit_in_order(combiner, [1])
    assert runner.first_running.wait(5)
    with pytest.raises(LockTimeout, match="queued"):
        combiner.submit("k", 2, timeout=0.1)
    runner.go_on.set()
    for thread in first:
        thread.join(10)
    assert runner.batches == [[1]]  # the timed-out request never ran
    assert combiner.submit("k", 3, timeout=1) == 30


def test_a_detached_batch_lets_the_next_one_run_while_it_still_waits() -> None:
    detached, release = threading.Event(), threading.Event()

    def runner(
        key: Hashable, items: Sequence[int], handle: BatchHandle[int, object]
    ) -> list[object]:
        if items[0] == 1:
            handle.detach()  # e.g. a batch left waiting for a lock that does not come
            detached.set()
            assert release.wait(10)
        return list(items)

    combiner = Combiner[int, object](runner, batch_max=8)
    with ThreadPoolExecutor(2) as pool:
        slow = pool.submit(combiner.submit, "k", 1, 10)
        # Request 2 must come after 1's batch has detached (sent first, it would simply run
        # first and prove nothing); undetached, it would queue until the release: no answer.
        assert detached.wait(10)
        assert pool.submit(combiner.submit, "k", 2, 10).result(5) == 2
        release.set()
        assert slow.result(5) == 1


def test_different_keys_do_not_wait_for_each_other() -> None:
    runner = Recorder()
    combiner = Combiner[int, object](runner, batch_max=8)
    _, first = submit_in_order(combiner, [1])
    assert runner.first_running.wait(5)
    assert combiner.submit("other", 5, timeout=1) == 50
    runner.go_on.set()
    for thread in first:
        thread.join(10)


def test_late_joiners_that_fit_ride_the_running_batch_and_the_others_wait() -> None:
    """A batch that got its lock takes the requests queued meanwhile that it can serve with
    what it holds (here: even numbers), in arrival order; the odd ones form the next batch."""
    arrived = threading.Event()
    batches: list[list[int]] = []

    def runner(
        key: Hashable, items: Sequence[int], handle: BatchHandle[int, object]
    ) -> list[object]:
        if items == [0]:
            assert arrived.wait(10)
            items = [*items, *handle.take(lambda item: item % 2 == 0, limit=2)]
        batches.append(list(items))
        return [item * 10 for item in items]

    combiner = Combiner[int, object](runner, batch_max=8)
    _, first = submit_in_order(combiner, [0])
    results, rest = submit_in_order(combiner, [1, 2, 3, 4, 6])
    arrived.set()
    for thread in first + rest:
        thread.join(10)
    assert batches == [[0, 2, 4], [1, 3, 6]]  # at most two joined; 6 waited its turn
    assert results == {1: 10, 2: 20, 3: 30, 4: 40, 6: 60}


def test_each_member_of_a_batch_keeps_its_own_deadline() -> None:
    runner = Recorder()
    seen: list[list[float]] = []
    combiner = Combiner[int, object](runner, batch_max=8)

    def recording(
        key: Hashable, items: Sequence[int], handle: BatchHandle[int, object]
    ) -> list[object]:
        seen.append(handle.deadlines)
        return runner(key, items, handle)

    combiner.run_batch = recording
    _, first = submit_in_order(combiner, [1])
    assert runner.first_running.wait(5)
    started = time.monotonic()
    done: dict[int, object] = {}
    threads = [
        threading.Thread(target=lambda i=i, t=t: done.update({i: combiner.submit("k", i, t)}))
        for i, t in ((2, 5.0), (3, 30.0))
    ]
    for queued, thread in enumerate(threads, start=1):
        thread.start()
        # 2 before 3: seen[1] is read in arrival order.
        wait_for(lambda n=queued: combiner.backlog("k") == (True, n), "the request queued")
    runner.go_on.set()
    for thread in first + threads:
        thread.join(10)
    assert done == {2: 20, 3: 30}
    short, long = seen[1]
    # Not cut to the oldest member's: each its own.
    assert short - started == pytest.approx(5.0, abs=0.5)
    assert long - started == pytest.approx(30.0, abs=0.5)


def test_a_member_answered_early_is_told_before_the_batch_ends() -> None:
    release = threading.Event()

    def runner(
        key: Hashable, items: Sequence[int], handle: BatchHandle[int, object]
    ) -> list[object]:
        handle.answer(len(items) - 1, items[-1] * 10)  # committed first: told at once
        assert release.wait(10)
        return [item * 10 for item in items]

    combiner = Combiner[int, object](runner, batch_max=8)
    blocker = Recorder()
    combiner.run_batch = lambda key, items, handle: (  # the first batch holds the lane
        blocker(key, items, handle) if items == [1] else runner(key, items, handle)
    )
    _, first = submit_in_order(combiner, [1])
    assert blocker.first_running.wait(5)
    results, rest = submit_in_order(combiner, [2, 3])
    blocker.go_on.set()
    wait_for(lambda: 3 in results, "request 3 answered")
    assert results.get(3) == 30 and 2 not in results  # 3 answered while 2's batch still runs
    release.set()
    for thread in first + rest:
        thread.join(10)
    assert results == {2: 20, 3: 30}


def test_a_request_handed_the_lead_as_its_wait_ends_keeps_its_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The race the combiner must survive: a queued request's wait times out at the moment the
    running batch hands it the lead. It must lead with its own (spent) deadline: answered
    LockTimeout at once, never a batch run with no deadline at all."""
    detach_now, detached, go_on = threading.Event(), threading.Event(), threading.Event()
    deadlines: list[list[float]] = []

    def runner(
        key: Hashable, items: Sequence[int], handle: BatchHandle[int, object]
    ) -> list[object]:
        deadlines.append(handle.deadlines)
        if items == [1]:
            assert detach_now.wait(10)
            handle.detach()  # hands the lead to the queued request
            detached.set()
            assert go_on.wait(10)
        return [item * 10 for item in items]

    class TimesOutAsItIsHandedTheLead(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            if timeout is None or self.is_set():
                return super().wait(timeout)
            time.sleep(timeout)  # its time runs out ...
            detach_now.set()  # ... just as the running batch hands it the lead
            assert detached.wait(10)
            return False

    class Pending(combining._Pending):  # type: ignore[type-arg]
        def __init__(self, item: object, deadline: float) -> None:
            super().__init__(item, deadline)
            if item == 2:
                self.event = TimesOutAsItIsHandedTheLead()

    monkeypatch.setattr(combining, "_Pending", Pending)
    combiner = Combiner[int, object](runner, batch_max=8)
    _, first = submit_in_order(combiner, [1])
    with pytest.raises(LockTimeout):
        combiner.submit("k", 2, timeout=0.1)
    go_on.set()
    for thread in first:
        thread.join(10)
    assert all(d != float("inf") for batch in deadlines for d in batch)
    assert [len(batch) for batch in deadlines] == [1]  # request 2 never ran
