"""The order service's stock client: what it retries (always with the same flag) and what not.
httpx.MockTransport stands in for the stock service; nothing really sleeps."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest

import order_service
from order_service.placing.batch_call import body, cut, entry, reduce_many
from order_service.placing.client import StockClient
from order_service.placing.retry import CallPolicy
from shared.config.settings import Settings


def client_for(
    handler: Callable[[httpx.Request], httpx.Response], retries: int = 2
) -> tuple[StockClient, list[float]]:
    sleeps: list[float] = []
    client = StockClient(
        "http://stock",
        CallPolicy(timeout=1, retries=retries, budget_seconds=60, backoff=0.1),
        transport=httpx.MockTransport(handler),
        sleep=sleeps.append,
    )
    return client, sleeps


def test_5xx_and_timeouts_are_retried_with_the_same_flag() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        if len(seen) == 1:
            raise httpx.ReadTimeout("slow", request=request)
        if len(seen) == 2:
            return httpx.Response(503, json={"error": "lock wait timed out"})
        return httpx.Response(200, json={"flag": "f1", "outcome": "duplicate"})

    client, sleeps = client_for(handler)
    answer = client.reduce_stock("f1", {"g1": 1})
    assert answer.outcome == "duplicate" and answer.attempts == 3
    assert seen == ["/reduceStock/f1"] * 3
    assert len(sleeps) == 2


def test_a_full_lock_queue_s_retry_after_is_waited_before_the_next_attempt() -> None:
    """A 503 of a full lock queue asks for a second: the attempt after it waits at least that
    (the backoff's jitter alone is under 0.1 s here, and would meet the same full queue)."""
    seen: list[str] = []
    full = {"error": "lock queue full", "dependency": "lock", "retryAfter": 1}

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        if len(seen) == 1:
            return httpx.Response(503, json=full, headers={"Retry-After": "1"})
        if len(seen) == 2:
            return httpx.Response(503, json={"error": "lock wait timed out"})
        return httpx.Response(200, json={"flag": "f1", "outcome": "deducted"})

    client, sleeps = client_for(handler)
    assert client.reduce_stock("f1", {"g1": 1}).outcome == "deducted"
    assert sleeps[0] == 1.0 and sleeps[1] < 1.0  # the second 503 asked for nothing

    batched: list[str] = []

    def batch_handler(request: httpx.Request) -> httpx.Response:
        batched.append(request.url.path)
        if len(batched) == 1:
            return httpx.Response(503, json=full, headers={"Retry-After": "2"})
        flags = [item["flag"] for item in json.loads(request.content)["flags"]]
        results = [{"flag": f, "outcome": "deducted"} for f in flags]
        return httpx.Response(200, json={"results": results})

    client, sleeps = client_for(batch_handler)
    answers = reduce_many(client, {"f1": {"g1": 1}, "f2": {"g2": 1}})
    assert {f: a.outcome for f, a in answers.items()} == {"f1": "deducted", "f2": "deducted"}
    assert sleeps == [2.0]


def test_insufficient_is_a_known_outcome_and_never_retried() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(409, json={"outcome": "insufficient", "shortfalls": []})

    client, _ = client_for(handler)
    assert client.reduce_stock("f1", {"g1": 1}).outcome == "insufficient"
    assert len(calls) == 1


def test_a_rejected_request_is_not_retried() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(404, json={"error": "unknown goods: g9", "goodsIds": ["g9"]})

    client, _ = client_for(handler)
    answer = client.reduce_stock("f1", {"g9": 1})
    assert (answer.outcome, answer.status, len(calls)) == ("rejected", 404, 1)


def test_exhausted_retries_leave_the_outcome_unknown_with_the_last_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    client, _sleeps = client_for(handler, retries=1)
    answer = client.reduce_stock("f1", {"g1": 1})
    assert answer.outcome == "unknown" and answer.attempts == 2
    assert answer.error == "ConnectError calling the stock service"
    assert client.flows("f1") is None


# A batch never decides a member's answer: a refusal of the whole call is no refusal of its
# orders, and a refusal after an attempt with no answer (which may have deducted) is no
# rejection. The batched route's client is order_service/placing/batch_call.py.

LINE = [{"goodsId": "g1", "goodsNum": 1}]


def deducted(flag: str) -> dict[str, object]:
    return {"flag": flag, "outcome": "deducted", "flows": [{"goodsId": "g1", "num": 1}]}


def test_a_lone_404_naming_its_goods_on_its_first_attempt_rejects_it() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, json={"error": "unknown goods: g9", "goodsIds": ["g9"]})

    client, _ = client_for(handler)
    answer = client.reduce_stock("f1", {"g9": 1})
    assert (answer.outcome, answer.status, answer.uncertain) == ("rejected", 404, False)


def test_a_lone_4xx_about_the_call_is_no_rejection_and_not_retried() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(413, json={"error": "request body too large"})

    client, _ = client_for(handler)
    answer = client.reduce_stock("f1", {"g1": 1})
    assert (answer.outcome, answer.status, len(calls)) == ("unknown", 413, 1)
    assert answer.error == "HTTP 413: request body too large" and not answer.uncertain


@pytest.mark.parametrize("first", ["timeout", 503])
def test_a_lone_404_after_a_timeout_or_a_5xx_is_unknown_not_rejected(first: object) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if len(seen) == 1 and first == "timeout":
            raise httpx.ReadTimeout("slow", request=request)
        if len(seen) == 1:
            return httpx.Response(503, json={"error": "lock wait timed out"})
        return httpx.Response(404, json={"error": "unknown goods: g1", "goodsIds": ["g1"]})

    client, _ = client_for(handler)
    answer = client.reduce_stock("f1", {"g1": 1})
    assert (answer.outcome, answer.status, answer.attempts) == ("unknown", 404, 2)
    assert answer.uncertain and "after an attempt with no answer" in (answer.error or "")


def test_a_batch_refused_413_is_sent_again_alone_and_each_flag_gets_its_own_answer() -> None:
    paths: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        paths.append(request.url.path)
        if request.url.path == "/reduceStock":
            return httpx.Response(413, json={"error": "request body too large"})
        flag = request.url.path.rsplit("/", 1)[1]
        if flag == "f3":
            return httpx.Response(404, json={"error": "unknown goods: g9", "goodsIds": ["g9"]})
        return httpx.Response(200, json=deducted(flag))

    client, _ = client_for(handler)
    answers = reduce_many(client, {"f1": {"g1": 1}, "f2": {"g1": 1}, "f3": {"g9": 1}})
    assert paths == ["/reduceStock", "/reduceStock/f1", "/reduceStock/f2", "/reduceStock/f3"]
    assert {f: a.outcome for f, a in answers.items()} == {
        "f1": "deducted",
        "f2": "deducted",
        "f3": "rejected",  # its own goods, on the single route
    }


@pytest.mark.parametrize("status", [400, 422])
def test_a_batch_refused_400_or_422_rejects_none_of_its_orders(status: int) -> None:
    paths: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        paths.append(request.url.path)
        if request.url.path == "/reduceStock":
            return httpx.Response(status, json={"error": "a flag is sent twice"})
        return httpx.Response(200, json=deducted(request.url.path.rsplit("/", 1)[1]))

    client, _ = client_for(handler)
    answers = reduce_many(client, {"f1": {"g1": 1}, "f2": {"g1": 1}})
    assert {a.outcome for a in answers.values()} == {"deducted"}
    assert paths == ["/reduceStock", "/reduceStock/f1", "/reduceStock/f2"]


def test_a_batch_5xx_then_4xx_leaves_its_orders_unknown_never_rejected() -> None:
    """The 503's call may have deducted (the answer was lost): the later 413, and the single
    route's 404 after it, say nothing of that attempt. The caller asks the stock database."""
    paths: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        paths.append(request.url.path)
        if request.url.path == "/reduceStock":
            if paths.count("/reduceStock") == 1:
                return httpx.Response(503, json={"error": "stock database unavailable"})
            return httpx.Response(413, json={"error": "request body too large"})
        return httpx.Response(404, json={"error": "unknown goods: g1", "goodsIds": ["g1"]})

    client, _ = client_for(handler)
    answers = reduce_many(client, {"f1": {"g1": 1}, "f2": {"g1": 1}})
    assert paths == ["/reduceStock"] * 2 + ["/reduceStock/f1", "/reduceStock/f2"]
    for answer in answers.values():
        assert (answer.outcome, answer.uncertain) == ("unknown", True), answer


def test_unknown_goods_after_unavailable_in_a_batch_is_unknown_not_rejected() -> None:
    bodies: list[list[str]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        flags = [f["flag"] for f in json.loads(request.read())["flags"]]
        bodies.append(flags)
        if len(bodies) == 1:
            results = [
                {"flag": "f1", "outcome": "unavailable", "error": "lock not had"},
                deducted("f2"),
            ]
        else:
            results = [{"flag": "f1", "outcome": "unknown_goods", "goodsIds": ["g1"]}]
        return httpx.Response(200, json={"results": results})

    client, _ = client_for(handler)
    answers = reduce_many(client, {"f1": {"g1": 1}, "f2": {"g1": 1}})
    assert bodies == [["f1", "f2"], ["f1"]]  # only the flag left unknown is asked again
    assert (answers["f1"].outcome, answers["f1"].uncertain) == ("unknown", True)
    assert answers["f2"].outcome == "deducted"


def test_a_batch_is_cut_by_bytes_each_call_at_most_the_cap() -> None:
    sizes: list[tuple[int, int]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent = request.read()
        flags = [f["flag"] for f in json.loads(sent)["flags"]]
        sizes.append((len(flags), len(sent)))
        return httpx.Response(200, json={"results": [deducted(f) for f in flags]})

    lines = {f"{i:02d}-{'x' * 61}": 1 for i in range(100)}  # a hundred 64-character ids
    wanted = {f"f{i}": lines for i in range(32)}
    client, _ = client_for(handler)
    client.batch_bytes = 48 * 1024
    answers = reduce_many(client, wanted)
    assert {a.outcome for a in answers.values()} == {"deducted"}
    assert sum(n for n, _ in sizes) == 32 and len(sizes) > 1
    assert max(size for _, size in sizes) <= 48 * 1024, sizes
    # Each call as full as the cap allows: one more order would not have fitted.
    one = len(entry("f0", lines, False)) + 1
    assert all(size + one > 48 * 1024 for _, size in sizes[:-1]), sizes


def test_cut_keeps_the_order_and_sends_a_flag_too_large_for_the_cap_alone() -> None:
    entries = {"a": b"x" * 10, "b": b"x" * 100, "c": b"x" * 10, "d": b"x" * 10}
    assert cut(entries, 40) == [["a"], ["b"], ["c", "d"]]
    sent = body(entries, ["c", "d"])
    assert len(sent) <= 40 and sent == b'{"flags":[' + b"x" * 10 + b"," + b"x" * 10 + b"]}"


def test_the_order_service_refuses_a_batch_body_cap_over_the_stock_service_s() -> None:
    too_big = Settings(max_body_bytes=32 * 1024)  # ORDER_BATCH_BYTES left at 48 KiB
    with pytest.raises(ValueError, match="ORDER_BATCH_BYTES"):
        order_service.create_app(too_big)
