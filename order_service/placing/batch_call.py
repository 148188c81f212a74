"""The batched PUT /reduceStock: the flags of one batch of orders, each with its own lines and
its own answer, as PUT /reduceStock/{flag} would give it alone.

Three rules keep a batch from deciding a member's answer:
- Cut by bytes as well as by count. The stock service refuses a body over its MAX_BODY_BYTES
  (413); a batch of hundred-line orders of long goods ids passes 64 KiB at 8 to 13 orders. So
  the body is cut before ORDER_BATCH_BYTES into calls of fewer flags, one after the other, each
  measured as the exact bytes sent.
- A whole-call answer is no member's refusal. A 4xx of the call (413, a 400/422 of the batch)
  refused the call before anything was written, so each of its flags is sent again alone on
  the single route, where only its own goods can reject it. A 5xx, a timeout or `unavailable`
  is asked again with the same flags, within the budget.
- A flag whose attempt had no answer may have been deducted: no later refusal makes it
  rejected (StockAnswer.uncertain); its outcome is asked of the stock database by the caller.
- A flag answered `not_attempted` (its lock not had within the call's budget, or its queue
  full: nothing written) is not asked again in this call, which would hold the batch's other
  orders behind the same lock: it is handed back (StockAnswer.not_attempted) to be sent again
  alone or in a later batch.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from order_service.core.fills import ALL, Fill
from order_service.placing.answers import (
    RETRYABLE_STATUS,
    UNKNOWN,
    StockAnswer,
    error_text,
    json_or_text,
    line_json,
    take_result,
)
from order_service.placing.client import StockClient, retry_after
from order_service.placing.retry import RetryBudget
from shared.contract import Outcome
from shared.metrics import STOCK_CALL_RETRIES
from shared.web.request_id import request_id_headers

log = logging.getLogger(__name__)
OPEN, CLOSE = b'{"flags":[', b"]}"
JSON = {"Content-Type": "application/json"}


def _nothing() -> None:
    pass


def entry(flag: str, lines: dict[str, int], hold: bool, fill: Fill = ALL) -> bytes:
    """One flag's part of the body, encoded as it is sent (so its size is what the cap sees):
    `fill` and a line's `location` only when the order asked for them, so an ordinary order's
    part is what it always was."""
    part: dict[str, Any] = {
        "flag": flag,
        "lines": [line_json(g, n, fill) for g, n in sorted(lines.items())],
    }
    if hold:
        part["hold"] = True
    if fill.asked:  # partial or backorder
        part["fill"] = fill.asked
    return json.dumps(part, separators=(",", ":")).encode()


def body(entries: dict[str, bytes], flags: list[str]) -> bytes:
    return OPEN + b",".join(entries[f] for f in flags) + CLOSE


def cut(entries: dict[str, bytes], cap: int) -> list[list[str]]:
    """The flags in calls of at most `cap` bytes each, in their order; a flag too large for the
    cap alone goes alone (the stock service is the judge of it)."""
    calls: list[list[str]] = []
    size = 0
    for flag, part in entries.items():
        grown = size + 1 + len(part)  # the comma before it
        if calls and grown <= cap:
            calls[-1].append(flag)
            size = grown
        else:
            calls.append([flag])
            size = len(OPEN) + len(part) + len(CLOSE)
    return calls


def reduce_many(
    stock: StockClient,
    wanted: dict[str, dict[str, int]],
    before_retry: Callable[[], None] = _nothing,
    holds: frozenset[str] = frozenset(),
    fills: Mapping[str, Fill] | None = None,
) -> dict[str, StockAnswer]:
    """Each flag's answer. The calls share one budget of seconds (STOCK_CALL_BUDGET, which
    the reconciler's rule counts on); each has the policy's attempts. `fills`: the flags of
    orders that asked for a fill or a location, and what they asked."""
    fills = fills or {}
    budget = stock.budget()
    answers = {flag: StockAnswer(UNKNOWN) for flag in wanted}
    entries = {
        flag: entry(flag, lines, flag in holds, fills.get(flag, ALL))
        for flag, lines in wanted.items()
    }
    for flags in cut(entries, stock.batch_bytes):
        if len(flags) == 1:  # alone: the single route, as a lone order goes
            [flag] = flags
            lone = stock.budget(budget.remaining_seconds())
            fill = fills.get(flag, ALL)
            stock.reduce_stock(
                flag, wanted[flag], before_retry, flag in holds, answers[flag], lone, fill
            )
            continue
        refused = _call(stock, flags, entries, answers, before_retry, budget.remaining_seconds())
        if refused:
            _alone(
                stock,
                refused,
                wanted,
                answers,
                before_retry,
                holds,
                budget.remaining_seconds,
                fills,
            )
    return answers


def _call(
    stock: StockClient,
    flags: list[str],
    entries: dict[str, bytes],
    answers: dict[str, StockAnswer],
    before_retry: Callable[[], None],
    seconds: float,
) -> list[str]:
    """One batched call of `flags`, retried for the flags still unknown; the flags of a call
    refused whole (a 4xx: nothing written), to be sent again alone."""
    budget = stock.budget(seconds)
    pending = list(flags)
    while pending and budget.next_attempt():
        if budget.used > 1:
            STOCK_CALL_RETRIES.inc()
            before_retry()
        client = stock.http if budget.used == 1 else stock.fresh
        for flag in pending:
            answers[flag].attempts += 1
        headers = {**JSON, **request_id_headers()}
        try:
            response = client.put("/reduceStock", content=body(entries, pending), headers=headers)
        except httpx.TransportError as exc:
            _no_answer(pending, answers, f"{type(exc).__name__} calling the stock service", budget)
            continue
        status = response.status_code
        if status != 200:
            error = error_text(json_or_text(response), status)
            if status in RETRYABLE_STATUS:
                _no_answer(pending, answers, error, budget)
                retry_after(response, budget)
                continue
            log.warning(
                "reduceStock of %d flags refused whole (%s): each sent alone", len(pending), error
            )
            for flag in pending:
                answers[flag].status, answers[flag].error = status, error
            return pending
        results = response.json()["results"]
        for result in results:
            take_result(answers[result["flag"]], result)
        # Asked again: only the flags the stock service could not serve now (its 503); never
        # one not attempted, whose lock is still held elsewhere.
        pending = [r["flag"] for r in results if r["outcome"] == Outcome.UNAVAILABLE]
    return []


def _no_answer(
    flags: list[str], answers: dict[str, StockAnswer], error: str, budget: RetryBudget
) -> None:
    log.warning("reduceStock of %d flags, attempt %d: %s", len(flags), budget.used, error)
    for flag in flags:
        answers[flag].no_answer(error)


def _alone(
    stock: StockClient,
    flags: list[str],
    wanted: dict[str, dict[str, int]],
    answers: dict[str, StockAnswer],
    before_retry: Callable[[], None],
    holds: frozenset[str],
    remaining: Callable[[], float],
    fills: Mapping[str, Fill],
) -> None:
    """A refused call wrote nothing, so each flag is decided as if alone: sent on the single
    route with the same flag (and what its earlier attempts said). Past the budget, the flags
    not sent stay unknown, for the stock database to tell."""
    before_retry()  # in trouble: the lane's next batch need not wait for these calls
    for flag in flags:
        if remaining() <= 0:
            break
        lone = stock.budget(remaining())
        fill = fills.get(flag, ALL)
        stock.reduce_stock(
            flag, wanted[flag], before_retry, flag in holds, answers[flag], lone, fill
        )
