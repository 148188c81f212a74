"""The order service's two groups (order_service/placing/turn.py): a batch whose stock call runs
long lets the next batch form, a short call keeps its lane (its callers make the next batch
whole), one batch of a process in a stock call at a time, and one in trouble gives its turn up
so that batches run side by side."""

from __future__ import annotations

import threading
import time

from order_service.placing.turn import StockTurns


def test_a_long_call_lets_the_next_form_and_the_next_calls_after_it() -> None:
    turns = StockTurns(long_call=0.05)
    detached: list[str] = []
    calling: list[str] = []
    first_calls, first_ends = threading.Event(), threading.Event()

    def batch(name: str, end: threading.Event | None) -> None:
        with turns.taken(lambda: detached.append(name)):
            calling.append(name)
            if end is not None:
                first_calls.set()
                assert end.wait(10)

    first = threading.Thread(target=batch, args=("first", first_ends))
    first.start()
    assert first_calls.wait(5)
    assert detached == []  # not yet long: the lane is kept
    deadline = time.monotonic() + 5
    while not detached and time.monotonic() < deadline:
        time.sleep(0.01)
    assert detached == ["first"]  # long now: the lane's next batch may form during the call
    second = threading.Thread(target=batch, args=("second", None))
    second.start()
    second.join(0.1)
    assert calling == ["first"]  # the second waits for its turn
    first_ends.set()
    first.join(5)
    second.join(5)
    assert calling == ["first", "second"]
    assert detached == ["first"]  # the second's call was short: its lane goes at its end


def test_short_calls_keep_their_lane_and_a_cancelled_watch_runs_nothing_later() -> None:
    turns = StockTurns(long_call=0.05)
    detached: list[str] = []
    for _ in range(20):
        with turns.taken(lambda: detached.append("short")):
            pass
    time.sleep(0.15)
    assert detached == []


def test_a_batch_in_trouble_gives_its_turn_up_and_an_error_ends_it() -> None:
    turns = StockTurns(long_call=30)
    detached: list[str] = []
    trouble_done, hold_on = threading.Event(), threading.Event()

    def troubled() -> None:
        with turns.taken(lambda: detached.append("troubled")) as in_trouble:
            in_trouble()
            in_trouble()  # idempotent: the turn is given up once
            trouble_done.set()
            assert hold_on.wait(10)

    thread = threading.Thread(target=troubled)
    thread.start()
    assert trouble_done.wait(5)
    with turns.taken(lambda: detached.append("beside")):  # side by side with the troubled one
        pass
    hold_on.set()
    thread.join(5)
    try:
        with turns.taken(lambda: None):
            raise RuntimeError("the call failed")
    except RuntimeError:
        pass
    with turns.taken(lambda: None):  # the failed call gave its turn up
        pass
    assert detached == ["troubled"] * 2  # in trouble: the lane let go too, at once


def test_a_turn_held_by_a_stuck_call_is_waited_for_no_longer_than_the_patience() -> None:
    turns = StockTurns(patience=0.05)
    stuck, done = threading.Event(), threading.Event()

    def stuck_call() -> None:
        with turns.taken(lambda: None):
            stuck.set()
            assert done.wait(10)

    thread = threading.Thread(target=stuck_call)
    thread.start()
    assert stuck.wait(5)
    started = time.monotonic()
    with turns.taken(lambda: None):  # beside the stuck one, after the patience
        waited = time.monotonic() - started
    assert 0.04 <= waited < 2.0
    done.set()
    thread.join(5)
    # The stuck call's end gave its turn up; the one that went beside had none to give.
    assert turns._turn.acquire(timeout=1)
