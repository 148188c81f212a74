"""The order service's stock client: what it retries (always with the same flag) and what not.
httpx.MockTransport stands in for the stock service; nothing really sleeps."""

from __future__ import annotations

from collections.abc import Callable

import httpx

from order_service.retry import CallPolicy
from order_service.stock_client import StockClient


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
        return httpx.Response(404, json={"error": "unknown goods: g9"})

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
