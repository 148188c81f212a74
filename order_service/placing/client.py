"""The order service's HTTP client of the stock service.

Failure types and what is done with each (httpx's tree: TransportError > TimeoutException,
ConnectError, ...):
- timeout, connection error, 5xx: the outcome is unknown; retried with the same flag, within
  a budget of attempts and seconds, with jittered backoff. A retry that meets the first
  attempt's work answers `duplicate`, and the caller confirms by polling the stock flow.
- 503 of a lock not had in time, or of its queue full (Retry-After): nothing written, retried
  like any 503, but no sooner than its Retry-After asks (within the budget). Every call says
  how long its answer is waited for (X-Caller-Timeout-Ms): the stock service waits for no
  lock on its behalf past it.
- 409 insufficient or voided: a known outcome, never retried. 409 unknown_flag: the flag was
  not live (Redis lost it): the caller may write it again and call again.
- 404 naming the order's own goods ids, with no attempt before it unanswered: rejected (the
  one refusal that is the order's own; the caller removes the order).
- any other 4xx (413, 400, 422, 401) refuses the call, not the order, and a 404 after an
  unanswered attempt (which may have deducted) says nothing of that attempt: never retried,
  never read as a rejection; the outcome is left unknown, for the stock database to tell.

`void(flag)` asks the stock service to settle a flag whose outcome is unknown: voided (nothing
was deducted, and nothing will be) or deducted (with its flows). It is idempotent, so it is
retried like a deduction.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from typing import Any

import httpx

from order_service.core.fills import ALL, Fill
from order_service.placing.answers import (
    RETRYABLE_STATUS,
    UNKNOWN,
    StockAnswer,
    StockDecision,
    error_text,
    json_or_text,
    line_json,
    own_unknown,
)
from order_service.placing.retry import CallPolicy, RetryBudget
from shared.contract import CALLER_TIMEOUT_HEADER
from shared.metrics import STOCK_CALL_RETRIES
from shared.web.request_id import request_id_headers

log = logging.getLogger(__name__)

# What the client makes of a call beyond the stock service's own outcomes (shared/contract.py):
KEEPALIVE_SECONDS = 2.0  # below gunicorn's keep-alive (inventory/local/gunicorn.py: 5 s)
# TCP keepalive probes after 1 s of silence. A call in flight through a load balancer that
# dies with its host sends nothing more, so nothing tells it: it would wait out the whole call
# timeout (4 s in the cluster) before its retry. The first probe after the other balancer took
# the address over is answered with a reset (it has no such connection): the attempt fails at
# once and is retried within the same budget. A live peer answers probes; a slow call is not cut.
PROBES = [
    (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1),
    (socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 1),
    (socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, 1),
    (socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 3),
]


def _probing(limits: httpx.Limits) -> httpx.HTTPTransport:
    return httpx.HTTPTransport(limits=limits, socket_options=PROBES)


def _nothing() -> None:
    pass


def retry_after(response: httpx.Response, budget: RetryBudget) -> None:
    """A 503's Retry-After (whole seconds, as the stock service sends it): the next attempt
    waits at least that long. An HTTP date or a bad value is ignored (the backoff stands)."""
    raw = response.headers.get("Retry-After", "")
    if raw.strip().isdigit():
        budget.retry_after(float(raw.strip()))


class StockClient:
    def __init__(
        self,
        base_url: str,
        policy: CallPolicy,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] | None = None,
        token: str = "",
        batch_bytes: int = 48 * 1024,
    ) -> None:
        timeout = policy.timeout
        # The stock service's STOCK_SERVICE_TOKEN, on every call (none: its routes are open),
        # and how long each call's answer is waited for: the stock service waits for no lock
        # on a call's behalf past it (and answers a batched call within half of it).
        credentials = {"Authorization": f"Bearer {token}"} if token else {}
        credentials[CALLER_TIMEOUT_HEADER] = str(round(timeout * 1000))
        # A first attempt, a poll and a void ride a kept-alive connection (a new connection
        # for each cost the order path a TCP handshake and a request more of parsing on both
        # sides: measured, about 0.5 ms of stack CPU per order); the pool lets a connection go
        # after 2 s idle, before gunicorn does (its keep-alive is 5 s), so the two never race.
        kept = httpx.Limits(keepalive_expiry=KEEPALIVE_SECONDS)
        self.http = httpx.Client(
            base_url=base_url,
            headers=credentials,
            timeout=timeout,
            transport=transport or _probing(kept),  # a test's own transport: as it is
        )
        # A retry takes a fresh connection: it must not ride a kept-alive connection to the
        # worker that stalled (a paused process accepts nothing new but holds what it had).
        # Seen in the stale-holder demo; a loopback connect costs about 0.1 ms.
        self.fresh = httpx.Client(
            base_url=base_url,
            headers=credentials,
            timeout=timeout,
            transport=transport or _probing(httpx.Limits(max_keepalive_connections=0)),
        )
        self.policy = policy
        self.sleep = sleep
        self.batch_bytes = batch_bytes  # ORDER_BATCH_BYTES: a batched call's body at most

    def budget(self, seconds: float | None = None) -> RetryBudget:
        """One call's attempts, the first included, as the policy allows them; `seconds`:
        what is left of a budget already begun."""
        p = self.policy
        budget = RetryBudget(
            p.retries + 1, p.budget_seconds if seconds is None else seconds, p.backoff
        )
        if self.sleep is not None:
            budget.sleep = self.sleep
        return budget

    def reduce_stock(
        self,
        flag: str,
        lines: dict[str, int],
        before_retry: Callable[[], None] = _nothing,
        hold: bool = False,
        answer: StockAnswer | None = None,
        budget: RetryBudget | None = None,
        fill: Fill = ALL,
    ) -> StockAnswer:
        """`before_retry`: called before each attempt after the first (a batch lets the next
        one start instead of holding it up while this call is in trouble); `hold`: a hold's
        deduction, its units held until paid (release_hold). `answer` and `budget`: a call
        carried on alone after a batched one (order_service/placing/batch_call.py), keeping what its
        attempts so far said and the time they left. `fill`: partial or backorder (?fill=...) and
        the lines' locations, each sent only when asked for."""
        params = {"hold": "true"} if hold else {}
        if fill.asked:  # partial or backorder, only when asked
            params["fill"] = fill.asked
        body = [line_json(g, n, fill) for g, n in sorted(lines.items())]
        budget = budget or self.budget()
        answer = answer or StockAnswer(UNKNOWN)
        while budget.next_attempt():
            answer.attempts += 1
            if budget.used > 1:
                STOCK_CALL_RETRIES.inc()
                before_retry()
            client = self.http if budget.used == 1 else self.fresh
            try:
                response = client.put(
                    f"/reduceStock/{flag}",
                    json=body,
                    params=params or None,
                    headers=request_id_headers(),
                )
            except httpx.TransportError as exc:
                answer.no_answer(f"{type(exc).__name__} calling the stock service")
                log.warning("reduceStock %s attempt %d: %s", flag, budget.used, answer.error)
                continue
            status, answer.body = response.status_code, json_or_text(response)
            if status in RETRYABLE_STATUS:
                answer.status = status
                answer.no_answer(error_text(answer.body, status))
                log.warning("reduceStock %s attempt %d: %s", flag, budget.used, answer.error)
                retry_after(response, budget)
                continue
            answer.status, answer.error = status, None
            if status == 200:
                answer.outcome = str(answer.body.get("outcome", UNKNOWN))
            elif status == 409:
                answer.outcome = str(answer.body.get("outcome", "insufficient"))
            elif status == 404 and own_unknown(answer.body):
                answer.own_goods_unknown(status, answer.body)  # its own goods or locations
            else:
                answer.refused_whole(status, answer.body)
                log.warning("reduceStock %s attempt %d: %s", flag, budget.used, answer.error)
            return answer
        return answer

    def decision(self, flag: str) -> StockDecision | None:
        """What the stock database decided for the flag, changing nothing (GET /flags):
        `outcome` None while undecided; None when the stock service gave no answer within the
        budget."""
        budget = self.budget()
        while budget.next_attempt():
            try:
                response = self.http.get(f"/flags/{flag}", headers=request_id_headers())
            except httpx.TransportError as exc:
                log.warning("flags %s attempt %d: %s", flag, budget.used, type(exc).__name__)
                continue
            if response.status_code == 200:
                body = response.json()
                return StockDecision(body["decision"], list(body.get("flows", [])), body)
            log.warning("flags %s attempt %d: HTTP %d", flag, budget.used, response.status_code)
        return None

    def release_hold(self, flag: str) -> bool:
        """A hold was paid: the stock service stops counting its units as held. True once it
        answered (released now, or nothing to release); False when it gave no answer (the
        elected reconciler sends it again)."""
        try:
            response = self.http.put(f"/holds/{flag}/release", headers=request_id_headers())
        except httpx.TransportError as exc:
            log.warning("release of hold %s: %s", flag, type(exc).__name__)
            return False
        if response.status_code != 200:
            log.warning("release of hold %s: HTTP %d", flag, response.status_code)
        return response.status_code == 200

    def void(self, flag: str) -> StockDecision | None:
        """Settle the flag: voided, or deducted (with its flows); None when the stock service
        gave no answer within the budget."""
        return self._settle("voidFlag", flag, "flows")

    def return_stock(self, flag: str) -> StockDecision | None:
        """Cancel: the flag's stock returned (with its return rows), or the flag voided
        (nothing was deducted); None when the stock service gave no answer within the
        budget. Idempotent, so it is retried like a deduction."""
        return self._settle("returnStock", flag, "returns")

    def _settle(self, route: str, flag: str, rows: str) -> StockDecision | None:
        budget = self.budget()
        while budget.next_attempt():
            try:
                response = self.http.put(f"/{route}/{flag}", headers=request_id_headers())
            except httpx.TransportError as exc:
                log.warning("%s %s attempt %d: %s", route, flag, budget.used, type(exc).__name__)
                continue
            if response.status_code == 200:
                body = response.json()
                return StockDecision(str(body["outcome"]), list(body.get(rows, [])), body)
            log.warning("%s %s attempt %d: HTTP %d", route, flag, budget.used, response.status_code)
        return None

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
        self.fresh.close()

    def __enter__(self) -> StockClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
