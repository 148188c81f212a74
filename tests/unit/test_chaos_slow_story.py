"""The late first attempt's story as slow-first-attempts lines it up (inventory/chaos/
slow_attempts.py): the cycles fit the fault's window, each restocks after the held attempts'
retries were refused and before those attempts wake, and the requests go out in that order;
the level a late attempt found counts the story's own adjustments; a window where no late
attempt found its stock back says I9 was not exercised."""

from __future__ import annotations

import itertools
import json
import random
import threading
from datetime import datetime, timedelta

import httpx
import pytest

from inventory.chaos import after_sale, late_attempts, slow_attempts
from inventory.chaos.verdict import COUNTED, UNKNOWN

RETRY_BACKOFF = 2.0  # the order service's backoff before a retry of a stock call, at most


def test_the_cycles_fit_the_window_and_restock_between_the_refusal_and_the_wake() -> None:
    starts = slow_attempts.plan(slow_attempts.HOLD)
    assert starts == [0.0, 13.0]  # two stories every run
    for start in starts:
        assert start + slow_attempts.DELAY + 1 <= slow_attempts.HOLD  # wakes before the heal
    for earlier, later in itertools.pairwise(starts):
        assert later >= earlier + slow_attempts.DELAY  # a cycle empties no shelf before a wake
    # the retry (call timeout + backoff) is refused before the restock, which comes before
    # the held attempts wake
    assert slow_attempts.CALL_TIMEOUT + RETRY_BACKOFF < slow_attempts.RESTOCK_AT
    assert slow_attempts.RESTOCK_AT + 1 <= slow_attempts.DELAY
    assert slow_attempts.plan(slow_attempts.DELAY) == []  # too short a window: no story


def test_the_nemesis_empties_arms_then_restocks_each_cycle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(slow_attempts, "DELAY", 0.1)
    monkeypatch.setattr(slow_attempts, "RESTOCK_AT", 0.05)
    sent: list[tuple[str, str, dict[str, object]]] = []
    levels = {"s0": 3, "s1": 0}
    stale = [True]  # the first count on s0 meets an order that moved the level: read again
    lock = threading.Lock()

    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else {}
        goods = request.url.path.split("/")[2]
        with lock:
            sent.append((request.method, request.url.path, body))
            if request.method == "GET":
                return httpx.Response(200, json={"num": levels[goods]})
            if request.url.path.startswith("/faults/"):
                return httpx.Response(200, json={})
            if body.get("reason") == "count" and stale.pop() if stale else False:
                levels[goods] -= 1
                return httpx.Response(409, json={"error": "stale"})
            levels[goods] = int(body.get("num", levels[goods] + int(body.get("delta", 0))))
            return httpx.Response(201, json={"num": levels[goods]})

    def client(self: object) -> httpx.Client:
        return httpx.Client(base_url="http://stock", transport=httpx.MockTransport(answer))

    monkeypatch.setattr(slow_attempts._Story, "_client", client)
    story = slow_attempts._Story({}, ["s0", "s1"], hold=2.5)  # cycles at 0 and 1.1 s (DELAY 0.1)
    assert story.starts == [0.0, 1.1]
    story._thread.join(5)
    story.stop()
    done = [(m, p, {k: v for k, v in b.items() if k != "reference"}) for m, p, b in sent]
    armed = ("PUT", "/faults/delay_before_deduct", {"value": 0.1, "times": 6})
    restock = {"reason": "restock", "delta": slow_attempts.RESTOCK}
    assert done[:8] == [
        ("GET", "/stock/s0", {}),
        ("POST", "/stock/s0/adjustments", {"reason": "count", "expected": 3, "num": 0}),
        ("GET", "/stock/s0", {}),  # 409 stale: read again, count again
        ("POST", "/stock/s0/adjustments", {"reason": "count", "expected": 2, "num": 0}),
        ("GET", "/stock/s1", {}),  # already empty: nothing to count
        armed,
        ("POST", "/stock/s0/adjustments", restock),
        ("POST", "/stock/s1/adjustments", restock),
    ]
    assert done[8:11] == [
        ("GET", "/stock/s0", {}),
        ("POST", "/stock/s0/adjustments", {"reason": "count", "expected": 60, "num": 0}),
        ("GET", "/stock/s1", {}),
    ]
    assert done[-1] == ("PUT", "/faults/delay_before_deduct", {"value": 0.0, "times": 1})
    assert (story.armed, story.restocked, story.failed, story.disarmed) == (2, 2, 0, True)
    assert all(b["reference"].startswith("slow-first-attempts-") for _, p, b in sent if "adj" in p)


def test_the_level_a_late_attempt_found_counts_the_storys_adjustments() -> None:
    t0 = datetime(2026, 1, 1)
    at = [t0 + timedelta(seconds=s) for s in range(12)]
    flows = {"s0": [(at[1], 9)]}  # sold out
    adjusted = {"s0": [(at[2], 0), (at[8], 60)]}  # emptied (already 0), stocked again
    assert late_attempts.level_at("s0", at[5], {"s0": 9}, flows, {}, adjusted) == 0
    assert late_attempts.level_at("s0", at[10], {"s0": 9}, flows, {}, adjusted) == 60
    assert late_attempts.level_at("s0", at[10], {"s0": 9}, flows, {}) == 0  # without them


def test_a_window_without_a_late_attempt_finding_stock_did_not_exercise_i9() -> None:
    assert late_attempts.exercised({"back_on_shelf": 3}) == COUNTED
    assert late_attempts.exercised({"back_on_shelf": 0}) == UNKNOWN


def test_the_scarce_goods_orders_bring_no_unit_back() -> None:
    # A cancel or an expiring hold would refill the shelf the nemesis has just emptied.
    rng = random.Random(7)
    assert {after_sale.scarce_intent(rng) for _ in range(1000)} <= {"none", "pay"}
