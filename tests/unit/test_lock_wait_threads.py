"""The threads the waiters of one stalled lock may take in a stock process
(stock_service.deduction's lock_queue.py: its thread bound) and where that bound comes from:
half gunicorn's `--threads` (server_threads.py there). A waiting request holds its thread, and
gunicorn's gthread worker queues every other request for a free one: past the bound, once the
lock is stalled, a newcomer's thread is refused at once (503, Retry-After) and the other goods
ids keep the rest of the threads."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from stock_service.deduction import lock_queue
from stock_service.deduction.lock_queue import LockQueueFull, LockQueues
from stock_service.deduction.server_threads import gunicorn_threads, lock_wait_threads

STALLED_AFTER = 0.05  # the batch budget stand-in: a waiter this old marks its lock stalled


class Key:
    """A request stand-in: the queues know a request by its identity."""


# Each request's thread lives on until the test ends, as a waiting request's does (a thread
# ended may lend its identity to the next one).
DONE = threading.Event()


def in_thread(queues: LockQueues, request: Key, names: list[str]) -> BaseException | None:
    """`request` joins the queues from a thread of its own, as a request of its own thread."""
    raised: list[BaseException] = []
    joined = threading.Event()

    def join() -> None:
        try:
            queues.join(request, names, names)
        except LockQueueFull as exc:
            raised.append(exc)
        joined.set()
        DONE.wait(30)

    threading.Thread(target=join, daemon=True).start()
    assert joined.wait(10)
    return raised[0] if raised else None


@pytest.fixture(autouse=True)
def _threads_end() -> Iterator[None]:
    DONE.clear()
    yield
    DONE.set()


def test_past_the_thread_bound_a_stalled_lock_s_newcomer_is_refused_the_other_goods_not() -> None:
    queues = LockQueues(256, "zookeeper", thread_bound=2, stalled_after=STALLED_AFTER)
    second, third = Key(), Key()
    queues.join(Key(), ["hot"], ["hot"])  # this thread's
    assert in_thread(queues, second, ["hot"]) is None
    # Not stalled yet (its waiters young: a healthy hot lock's queue): not bounded.
    assert in_thread(queues, third, ["hot"]) is None
    assert queues.threads("hot") == 3
    queues.leave(third)
    time.sleep(STALLED_AFTER * 2)
    refused = in_thread(queues, Key(), ["hot", "cold"])
    assert isinstance(refused, LockQueueFull) and refused.goods_id == "hot"
    assert "(half its threads)" in refused.answer() and refused.retry_after == 1
    assert (queues.waiters("hot"), queues.waiters("cold")) == (2, 0)  # counted nowhere
    assert in_thread(queues, Key(), ["cold"]) is None  # another goods id: a thread of its own
    # One thread's many requests (a batched call's flags) take one thread: this one waits
    # already, so its next request is let in.
    queues.join(Key(), ["hot"], ["hot"])
    assert queues.threads("hot") == 2 and queues.waiters("hot") == 3


def test_the_waiters_that_waited_out_a_stall_leave_it_marked_stalled_for_their_followers() -> None:
    """The threads that waited a stalled lock out leave at their callers' deadlines; the next
    ones, young, must not take every thread again for another whole deadline."""
    queues = LockQueues(256, "zookeeper", thread_bound=1, stalled_after=STALLED_AFTER)
    old = Key()
    assert in_thread(queues, old, ["hot"]) is None
    time.sleep(STALLED_AFTER * 2)
    queues.mark_stalled(["hot"])  # its deadline passed without the lock (holds.py)
    queues.leave(old)
    assert queues.threads("hot") == 0
    assert in_thread(queues, Key(), ["hot"]) is None  # one thread may wait
    assert isinstance(in_thread(queues, Key(), ["hot"]), LockQueueFull)


def test_no_thread_bound_when_the_process_s_threads_are_unknown() -> None:
    queues = LockQueues(256, "zookeeper", stalled_after=0.0)
    for _ in range(20):
        assert in_thread(queues, Key(), ["hot"]) is None
    assert queues.threads("hot") == 20


@pytest.mark.parametrize(
    ("argv", "env", "threads"),
    [
        (["/venv/python", "-m", "gunicorn", "app", "--workers", "2", "--threads", "8"], {}, 8),
        (["/venv/bin/gunicorn", "app", "--threads=4"], {}, 4),
        (["/venv/bin/gunicorn", "app"], {"GUNICORN_CMD_ARGS": "--threads 6 --workers 2"}, 6),
        (["/venv/bin/gunicorn", "app"], {}, None),
        (["pytest", "-x", "--threads", "8"], {}, None),  # not gunicorn's
    ],
)
def test_the_threads_are_gunicorn_s_own(
    argv: list[str], env: dict[str, str], threads: int | None
) -> None:
    assert gunicorn_threads(argv, env) == threads


def test_a_stalled_lock_may_take_half_the_threads() -> None:
    assert [lock_wait_threads(n) for n in (None, 1, 2, 8, 9)] == [None, 1, 1, 4, 4]


def test_a_request_of_several_names_one_of_them_stalled_is_refused_holding_none() -> None:
    """It would hold the others (another hot goods id) while it waits for the stalled one."""
    queues = LockQueues(256, "zookeeper", thread_bound=4, stalled_after=STALLED_AFTER)
    gave_up = Key()
    assert in_thread(queues, gave_up, ["hot0"]) is None
    assert in_thread(queues, Key(), ["hot0", "hot1"]) is None  # not stalled yet
    time.sleep(STALLED_AFTER * 2)
    # Merely slow to come (its waiters waiting yet): not refused.
    assert in_thread(queues, Key(), ["hot0", "hot2"]) is None
    queues.mark_stalled(["hot0"])  # waited out its time for it (holds.py)
    queues.leave(gave_up)
    refused = in_thread(queues, Key(), ["hot1", "hot0"])
    assert isinstance(refused, LockQueueFull) and refused.goods_id == "hot0"
    assert queues.waiters("hot1") == 1  # the first one's only
    assert in_thread(queues, Key(), ["hot1"]) is None  # hot1 alone: its own wait
    assert in_thread(queues, Key(), ["hot0"]) is None  # one name: the thread bound's
    done = Key()
    queues.join(done, ["hot0"], ["hot0"])
    queues.leave(done, held=True)  # had it: stalled no more
    assert in_thread(queues, Key(), ["hot0", "hot1"]) is None


def test_a_stalled_mark_expires_so_a_lock_asked_for_only_with_others_is_not_refused_for_ever(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A big order's goods ids are only ever asked for together: a mark left by a fault (its
    waiters timed out) must not refuse them once the fault is over (a quick run's reconciler
    was refused for two minutes, 71 orders left PENDING)."""
    monkeypatch.setattr(lock_queue, "STALLED_MARK", STALLED_AFTER)
    queues = LockQueues(256, "zookeeper", thread_bound=4, stalled_after=STALLED_AFTER)
    queues.mark_stalled(["big1"])
    assert isinstance(in_thread(queues, Key(), ["big1", "big2"]), LockQueueFull)
    time.sleep(STALLED_AFTER * 2)
    assert in_thread(queues, Key(), ["big1", "big2"]) is None


def test_a_busy_lock_that_moves_is_not_bounded_nor_marked_stalled_by_a_waiter_that_gave_up() -> (
    None
):
    """A hot lock on a loaded machine keeps its waiters past the patience: a hundred-line
    order's hold can take a second beside a chaos run. While it moves (a waiting claim sees its
    holder change, or a request of this process has it) it is not stalled: its newcomers are
    not refused, and a waiter that leaves without it does not mark it (it had refused, for
    seconds at a time, every other order naming it beside other names)."""
    queues = LockQueues(256, "zookeeper", thread_bound=2, stalled_after=STALLED_AFTER)
    first, second = Key(), Key()
    assert in_thread(queues, first, ["hot", "big"]) is None
    assert in_thread(queues, second, ["hot", "big"]) is None
    time.sleep(STALLED_AFTER * 2)
    assert isinstance(in_thread(queues, Key(), ["hot"]), LockQueueFull)  # not seen to move
    queues.moved({"hot": time.monotonic()})  # a waiting claim saw another holder take it
    assert in_thread(queues, Key(), ["hot"]) is None  # a third thread: let wait
    queues.mark_stalled(["hot"], second)  # gave up, but the lock moved while it waited
    assert in_thread(queues, Key(), ["hot", "other"]) is None  # no hostage refusal
    # A request of this process having it counts as well.
    time.sleep(STALLED_AFTER * 2)
    assert isinstance(in_thread(queues, Key(), ["big"]), LockQueueFull)
    queues.leave(first, held=True)  # its batch had both
    assert in_thread(queues, Key(), ["big"]) is None
    queues.mark_stalled(["big"], second)
    assert in_thread(queues, Key(), ["big", "other"]) is None
    # Not moved since it joined: marked, and the next request of several names is refused.
    stuck = Key()
    assert in_thread(queues, stuck, ["cold"]) is None
    queues.mark_stalled(["cold"], stuck)
    assert isinstance(in_thread(queues, Key(), ["cold", "other"]), LockQueueFull)


def test_a_stalled_lock_s_threads_are_bounded_when_it_moved_only_before_its_waiters_came() -> None:
    queues = LockQueues(256, "zookeeper", thread_bound=2, stalled_after=STALLED_AFTER)
    queues.moved({"hot": time.monotonic()})  # it moved, then its holder stalled
    time.sleep(0.01)
    assert in_thread(queues, Key(), ["hot"]) is None
    assert in_thread(queues, Key(), ["hot"]) is None
    time.sleep(STALLED_AFTER * 2)
    assert isinstance(in_thread(queues, Key(), ["hot"]), LockQueueFull)


def test_a_lock_is_marked_stalled_only_once_still_for_twice_the_longest_recent_hold() -> None:
    """Beside a chaos run a hundred-line batch's hold took up to 1.2 s: a waiter answered after
    its 1 s budget had seen no move, yet the lock was between two holds. Twice the longest of
    the recent holds tells a stall from that before a mark refuses every request naming the
    lock beside others; on a quiet machine (holds of 10-30 ms) the patience still rules. The
    thread bound keeps the patience: late, it costs the other goods ids their threads."""
    hold = STALLED_AFTER * 2
    queues = LockQueues(256, "zookeeper", thread_bound=2, stalled_after=STALLED_AFTER)
    queues.held_for(hold)
    young = Key()
    queues.join(young, ["hot"], ["hot"])  # this thread's: its next requests pass the bound
    assert in_thread(queues, Key(), ["hot"]) is None
    time.sleep(hold)  # past the patience, within two holds
    assert isinstance(in_thread(queues, Key(), ["hot"]), LockQueueFull)  # the thread bound
    queues.mark_stalled(["hot"], young)
    queues.join(Key(), ["hot", "other"], ["hot", "other"])  # not marked: no hostage refusal
    time.sleep(hold * 1.5)  # now still for over two holds
    queues.mark_stalled(["hot"], young)
    with pytest.raises(LockQueueFull):
        queues.join(Key(), ["hot", "more"], ["hot", "more"])
