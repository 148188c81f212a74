"""The bounded wait for companions (Combiner's companion_wait, the order service's
ORDER_BATCH_WAIT_MS): a lone request never waits; a request that queued behind a batch and is
handed the lead waits at most the bound, less once the batch is full, and never into its own
deadline. The bounds checked here are behaviour, not speed: each is far above what a run needs,
so a slow machine passes and a wait that ignores its bound fails."""

from __future__ import annotations

import threading
import time

import pytest

from coordination.combining import Combiner
from tests.unit.test_combining import Recorder, submit_in_order
from tests.waiting import wait_for

LONG = 30.0  # a bound no test may come near: reaching it means the wait ignored its rule


def test_a_lone_request_never_waits_for_companions() -> None:
    runner = Recorder(block_first=False)
    combiner = Combiner[int, object](runner, batch_max=8, companion_wait=LONG)
    started = time.monotonic()
    assert combiner.submit("k", 4, timeout=60) == 40
    assert time.monotonic() - started < LONG / 3
    assert runner.batches == [[4]]


def _queued_then_led(wait: float, batch_max: int) -> tuple[Recorder, Combiner[int, object], dict]:
    """Request 1 runs a blocked batch; 2 queues behind it; then 1's batch ends and 2 leads."""
    runner = Recorder()
    combiner = Combiner[int, object](runner, batch_max=batch_max, companion_wait=wait)
    results, _ = submit_in_order(combiner, [1])
    assert runner.first_running.wait(5)
    more: dict[int, object] = {}
    # Its patience far above the wait, so that the wait is not cut short by its deadline.
    threading.Thread(target=lambda: more.update({2: combiner.submit("k", 2, 4 * LONG)})).start()
    wait_for(lambda: combiner.backlog("k") == (True, 1), "request 2 queued")
    runner.go_on.set()
    wait_for(lambda: 1 in results, "the first batch answered")
    return runner, combiner, more  # request 2's answer lands here, when it comes


def test_a_request_led_after_queueing_takes_a_companion_that_comes_within_the_wait() -> None:
    runner, combiner, results = _queued_then_led(LONG, batch_max=2)
    assert len(runner.batches) == 1, "request 2 ran without waiting for a companion"
    started = time.monotonic()
    third = threading.Thread(target=lambda: results.update({3: combiner.submit("k", 3, 60)}))
    third.start()
    third.join(LONG)
    # The batch is full (batch_max 2) as the companion arrives: it runs then, not at the bound.
    assert time.monotonic() - started < LONG / 3
    assert runner.batches == [[1], [2, 3]]
    wait_for(lambda: results.get(2) == 20 and results.get(3) == 30, "both answered")


@pytest.mark.parametrize("wait", [0.2, 0.5])
def test_with_no_companion_the_wait_ends_at_its_bound(wait: float) -> None:
    started = time.monotonic()
    runner, _, results = _queued_then_led(wait, batch_max=8)
    wait_for(lambda: 2 in results, "request 2 answered", timeout=LONG)
    took = time.monotonic() - started
    assert runner.batches == [[1], [2]]
    assert results[2] == 20
    assert took >= wait, "request 2 did not wait for companions at all"
    assert took < wait + LONG / 3


def test_the_wait_never_runs_into_the_leaders_own_deadline() -> None:
    runner = Recorder()
    combiner = Combiner[int, object](runner, batch_max=8, companion_wait=LONG)
    results: dict[int, object] = {}
    first = threading.Thread(target=lambda: results.update({1: combiner.submit("k", 1, 60)}))
    first.start()
    assert runner.first_running.wait(5)
    # Request 2's patience is shorter than the wait: led, it runs at once instead of timing out.
    second = threading.Thread(target=lambda: results.update({2: combiner.submit("k", 2, 5.0)}))
    second.start()
    wait_for(lambda: combiner.backlog("k") == (True, 1), "request 2 queued")
    runner.go_on.set()
    second.join(LONG)
    first.join(LONG)
    assert results == {1: 10, 2: 20}
    assert runner.batches == [[1], [2]]


def test_a_negative_wait_is_refused() -> None:
    with pytest.raises(ValueError, match="companion_wait"):
        Combiner[int, object](Recorder(), batch_max=8, companion_wait=-0.001)


def _submit(combiner: Combiner[int, object], item: int, results: dict[int, object]) -> None:
    threading.Thread(target=lambda: results.update({item: combiner.submit("k", item, 60)})).start()


def test_the_callers_of_a_batch_that_just_ended_are_waited_for_as_they_come_back() -> None:
    """Under a steady load every caller is in the batch that runs, so the lane goes idle when
    it ends: the first caller back must not run alone (a batch of one) while the others queue
    behind it. It waits for as many as that batch served, within the bound."""
    runner = Recorder()
    combiner = Combiner[int, object](runner, batch_max=8, companion_wait=LONG / 3)
    results: dict[int, object] = {}
    _submit(combiner, 1, results)
    assert runner.first_running.wait(5)
    for item in (2, 3):
        _submit(combiner, item, results)
        wait_for(lambda item=item: combiner.backlog("k")[1] == item - 1, f"request {item} queued")
    started = time.monotonic()
    runner.go_on.set()
    # 2 leads with 3 queued and the one caller of the batch before coming back: it waits for 4.
    wait_for(lambda: 1 in results, "the first batch answered")
    _submit(combiner, 4, results)
    wait_for(lambda: 4 in results, "the second batch answered")
    # Its three callers come back to an idle lane: the first waits for the other two.
    for item in (5, 6, 7):
        _submit(combiner, item, results)
    wait_for(lambda: 7 in results and 5 in results and 6 in results, "the third batch answered")
    assert time.monotonic() - started < LONG / 3, "a wait ran to its bound with all back"
    assert runner.batches == [[1], [2, 3, 4], [5, 6, 7]]


def test_an_order_to_an_idle_lane_long_after_the_last_batch_never_waits() -> None:
    wait = 3.0
    runner = Recorder()
    combiner = Combiner[int, object](runner, batch_max=8, companion_wait=wait)
    results: dict[int, object] = {}
    _submit(combiner, 1, results)
    assert runner.first_running.wait(5)
    _submit(combiner, 2, results)
    wait_for(lambda: combiner.backlog("k") == (True, 1), "request 2 queued")
    runner.go_on.set()
    _submit(combiner, 3, results)  # 2 waits for it: the batch of [2, 3] ends
    wait_for(lambda: 2 in results and 3 in results, "the batch of two answered")
    time.sleep(wait * 1.1)  # longer than the wait since that batch: the load has gone
    started = time.monotonic()
    assert combiner.submit("k", 4, 60) == 40
    assert time.monotonic() - started < wait, "a lone request waited for companions"
    assert runner.batches == [[1], [2, 3], [4]]
