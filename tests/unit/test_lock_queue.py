"""The pure parts of a request's wait for a lock: the per-lock queue's bound and its bounded
labels (stock_service/deduction/lock_queue.py), the caller's deadline read from its header
(stock_service/deduction/caller_deadline.py), and what the order service makes of a batched call's
`not_attempted` (order_service/placing/answers.py)."""

from __future__ import annotations

import json

import httpx
import pytest

from order_service.placing.answers import UNKNOWN, StockAnswer, take_result
from order_service.placing.batch_call import reduce_many
from order_service.placing.client import StockClient
from order_service.placing.retry import CallPolicy
from shared.contract import CALLER_TIMEOUT_HEADER
from stock_service.deduction import caller_deadline
from stock_service.deduction.lock_queue import OTHER, LockQueueFull, LockQueues, TopGoods


class Key:
    """A request stand-in: the queues know a request by its identity."""


def test_a_newcomer_past_the_bound_is_refused_counting_nothing_and_a_leave_frees_its_place() -> (
    None
):
    queues = LockQueues(2, "zookeeper", TopGoods(top=10, labels=100))
    a, b, c = Key(), Key(), Key()
    queues.join(a, ["hot"], ["hot"])
    queues.join(b, ["hot", "cold"], ["hot", "cold"])
    with pytest.raises(LockQueueFull) as refused:
        queues.join(c, ["cold", "hot"], ["cold", "hot"])
    assert (refused.value.goods_id, refused.value.lock, refused.value.retry_after) == (
        "hot",
        "hot",
        1,
    )
    assert "zookeeper lock 'hot'" in refused.value.answer()
    assert (queues.waiters("hot"), queues.waiters("cold")) == (2, 1)  # c counted nowhere
    queues.leave(b)
    queues.leave(b)  # idempotent
    queues.join(c, ["cold", "hot"], ["cold", "hot"])
    assert (queues.waiters("hot"), queues.waiters("cold")) == (2, 1)
    queues.leave(a)
    queues.leave(c)
    assert (queues.waiters("hot"), queues.waiters("cold")) == (0, 0)


def test_under_the_global_scope_the_refusal_names_the_lock_and_a_goods_id_of_the_request() -> None:
    queues = LockQueues(1, "redis")
    queues.join(Key(), ["global"], ["a"])
    with pytest.raises(LockQueueFull) as refused:
        queues.join(Key(), ["global"], ["c", "b"])
    assert (refused.value.lock, refused.value.goods_id) == ("global", "b")


def test_the_gauge_shows_the_longest_queues_and_sums_the_rest_within_the_label_cap() -> None:
    top = TopGoods(top=2, labels=3)
    counts: dict[str, int] = {}

    def queue(name: str, waiters: int) -> None:
        before = counts.get(name, 0)
        while before != waiters:
            step = 1 if waiters > before else -1
            top.changed(name, before, before + step)
            before += step
        counts[name] = waiters

    queue("a", 1)  # one in flight is no queue: summed as other
    assert (top.shown, top.other) == ({}, 1)
    queue("a", 3)
    queue("b", 2)
    assert (top.shown, top.other) == ({"a": 3, "b": 2}, 0)
    queue("c", 5)  # longer than b: b moves to other
    assert (top.shown, top.other) == ({"a": 3, "c": 5}, 2)
    queue("d", 9)  # a fourth label would pass the cap: d stays in other
    assert top.shown == {"a": 3, "c": 5} and top.other == 11
    assert top.labelled == {"a", "b", "c"}
    assert (top.refusal_label("b"), top.refusal_label("d")) == ("b", OTHER)
    queue("c", 0)
    queue("b", 4)  # labelled before: it may come back within the cap
    assert (top.shown, top.other) == ({"a": 3, "b": 4}, 9)
    assert sum(top.shown.values()) + top.other == sum(counts.values())


@pytest.mark.parametrize(
    ("header", "timeout"),
    [(None, None), ("5000", 5.0), ("250", 0.25), ("0", None), ("-3", None), ("soon", None)],
)
def test_the_caller_timeout_is_read_in_milliseconds_and_a_bad_one_ignored(
    header: str | None, timeout: float | None
) -> None:
    headers = {} if header is None else {CALLER_TIMEOUT_HEADER: header}
    assert caller_deadline.caller_timeout(headers) == timeout


def test_a_wait_ends_by_the_caller_s_deadline_and_a_batch_within_half_its_timeout() -> None:
    caller_deadline.start({CALLER_TIMEOUT_HEADER: "5000"}, now=100.0)
    assert caller_deadline.within(10.0, now=100.0) == pytest.approx(104.9)
    assert caller_deadline.within(1.0, now=100.0) == 101.0
    assert caller_deadline.batch_budget(1.0) == 1.0
    caller_deadline.start({CALLER_TIMEOUT_HEADER: "1000"}, now=100.0)
    assert caller_deadline.batch_budget(1.0) == 0.5
    assert caller_deadline.within(10.0, now=100.0) == pytest.approx(100.9)
    caller_deadline.start({}, now=100.0)  # no header: LOCK_TIMEOUT as before
    assert caller_deadline.within(10.0, now=100.0) == 110.0
    assert caller_deadline.batch_budget(1.0) == 1.0


def test_a_flag_not_attempted_is_unknown_but_not_uncertain_and_marked_to_send_again() -> None:
    answer = StockAnswer(UNKNOWN, attempts=1)
    result = {"flag": "o-1", "outcome": "not_attempted", "error": "lock 'g' not had"}
    take_result(answer, result)
    assert (answer.outcome, answer.uncertain, answer.not_attempted) == (UNKNOWN, False, True)
    assert answer.error == "not_attempted: lock 'g' not had"
    # A later attempt's answer is its own.
    take_result(answer, {"flag": "o-1", "outcome": "deducted", "flows": []})
    assert (answer.outcome, answer.not_attempted) == ("deducted", False)


def test_a_batched_call_sends_its_timeout_and_never_asks_again_for_a_flag_not_attempted() -> None:
    """Asking again in the same call would hold its other orders behind the same lock."""
    seen: list[tuple[list[str], str | None]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        flags = [f["flag"] for f in json.loads(request.read())["flags"]]
        seen.append((flags, request.headers.get(CALLER_TIMEOUT_HEADER)))
        results = [
            {"flag": "f1", "outcome": "deducted", "flows": []},
            {"flag": "f2", "outcome": "not_attempted", "error": "lock 'g2' not had"},
        ]
        return httpx.Response(200, json={"results": results})

    policy = CallPolicy(timeout=5, retries=2, budget_seconds=60, backoff=0.1)
    transport = httpx.MockTransport(handler)
    with StockClient("http://stock", policy, transport=transport, sleep=lambda _: None) as stock:
        answers = reduce_many(stock, {"f1": {"g1": 1}, "f2": {"g2": 1}})
    assert seen == [(["f1", "f2"], "5000")]
    assert answers["f1"].outcome == "deducted"
    assert (answers["f2"].outcome, answers["f2"].not_attempted) == (UNKNOWN, True)
