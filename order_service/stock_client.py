"""The order service's HTTP client of the stock service.

Failure types and what is done with each (httpx's tree: TransportError > TimeoutException,
ConnectError, ...):
- timeout, connection error, 5xx: the outcome is unknown; retried with the same flag, within
  a budget of attempts and seconds, with jittered backoff. A retry that meets the first
  attempt's work answers `duplicate`, and the caller confirms by polling the stock flow.
- 409 insufficient: a known outcome, never retried.
- 400/404: the request itself is wrong, never retried.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from shared.metrics import STOCK_CALL_RETRIES
from shared.request_id import request_id_headers
from shared.retry import RetryBudget

log = logging.getLogger(__name__)

UNKNOWN = "unknown"  # no answer that says what happened
RETRYABLE_STATUS = frozenset({500, 502, 503, 504})


@dataclass
class StockAnswer:
    outcome: str  # deducted | duplicate | insufficient | rejected | unknown
    status: int | None = None
    body: Any = None
    attempts: int = 0
    error: str | None = None  # the last failure, for the order's reason and the log


class StockClient:
    def __init__(
        self,
        base_url: str,
        timeout: float,
        retries: int,
        budget_seconds: float,
        backoff: float,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        # A fresh connection per call: a retry must not ride a kept-alive connection to the
        # worker that stalled (a paused process accepts nothing new but holds what it had),
        # nor race gunicorn closing an idle one (its keep-alive is 2 s). Measured in the
        # stale-holder demo; a loopback connect costs about 0.1 ms.
        self.http = httpx.Client(
            base_url=base_url,
            timeout=timeout,
            transport=transport,
            limits=httpx.Limits(max_keepalive_connections=0),
        )
        self.retries = retries
        self.budget_seconds = budget_seconds
        self.backoff = backoff
        self.sleep = sleep

    def reduce_stock(self, flag: str, lines: dict[str, int]) -> StockAnswer:
        body = [{"goodsId": g, "goodsNum": n} for g, n in sorted(lines.items())]
        budget = RetryBudget(self.retries + 1, self.budget_seconds, self.backoff)
        if self.sleep is not None:
            budget.sleep = self.sleep
        answer = StockAnswer(UNKNOWN)
        while budget.next_attempt():
            answer.attempts = budget.used
            if budget.used > 1:
                STOCK_CALL_RETRIES.inc()
            try:
                response = self.http.put(
                    f"/reduceStock/{flag}", json=body, headers=request_id_headers()
                )
            except httpx.TransportError as exc:
                answer.error = f"{type(exc).__name__} calling the stock service"
                log.warning("reduceStock %s attempt %d: %s", flag, budget.used, answer.error)
                continue
            answer.status = response.status_code
            answer.body = _json_or_text(response)
            if response.status_code in RETRYABLE_STATUS:
                answer.error = _error_text(answer.body, response.status_code)
                log.warning("reduceStock %s attempt %d: %s", flag, budget.used, answer.error)
                continue
            answer.error = None
            if response.status_code == 200:
                answer.outcome = str(answer.body.get("outcome", UNKNOWN))
            elif response.status_code == 409:
                answer.outcome = "insufficient"
            else:
                answer.outcome = "rejected"
            return answer
        return answer

    def flows(self, flag: str) -> list[dict[str, Any]] | None:
        """The stock flow of a flag, or None when the stock service gave no answer."""
        try:
            response = self.http.get(f"/stockFlow/{flag}", headers=request_id_headers())
        except httpx.TransportError as exc:
            log.warning("stockFlow %s: %s", flag, type(exc).__name__)
            return None
        if response.status_code != 200:
            log.warning("stockFlow %s: HTTP %d", flag, response.status_code)
            return None
        flows: list[dict[str, Any]] = response.json()
        return flows

    def healthy(self) -> bool:
        try:
            return self.http.get("/healthz").status_code == 200
        except httpx.TransportError:
            return False

    def close(self) -> None:
        self.http.close()


def _json_or_text(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text[:200]


def _error_text(body: Any, status: int) -> str:
    if isinstance(body, dict) and "error" in body:
        return f"HTTP {status}: {body['error']}"
    return f"HTTP {status}"
