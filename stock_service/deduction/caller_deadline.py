"""How long a request's caller waits for its answer, so that the stock service waits for no lock
on its behalf after the caller has gone. The order service sends its call timeout in the
X-Caller-Timeout-Ms header (shared/contract.py: relative, so no two hosts' clocks are
compared); the route's thread keeps the deadline it makes (CALLER_DEADLINE), and every wait for
a lock that request causes ends by it (stock_service/deduction/steps.py). A caller that sends none
(an operator's curl, a test) is waited for up to LOCK_TIMEOUT, as before.

Kafka's producer does the same with its records: a record whose own delivery timeout passed is
failed, the others are not."""

from __future__ import annotations

import time
from contextvars import ContextVar
from typing import Protocol

from shared.contract import CALLER_TIMEOUT_HEADER


class Headers(Protocol):
    def get(self, key: str) -> str | None: ...


# time.monotonic() by which this request's answer must be on its way; None: no caller deadline.
CALLER_DEADLINE: ContextVar[float | None] = ContextVar("caller_deadline", default=None)
CALLER_TIMEOUT: ContextVar[float | None] = ContextVar("caller_timeout", default=None)
# Time left for the answer to travel back before the caller gives up (at most half its time).
ANSWER_MARGIN = 0.1


def caller_timeout(headers: Headers) -> float | None:
    """The caller's timeout in seconds, or None when it sent none (or one that is no positive
    number of milliseconds: ignored, as if not sent)."""
    raw = headers.get(CALLER_TIMEOUT_HEADER)
    if raw is None:
        return None
    try:
        millis = float(raw)
    except ValueError:
        return None
    return millis / 1000 if 0 < millis < float("inf") else None


def start(headers: Headers, now: float | None = None) -> None:
    """At a request's arrival: its caller's deadline, for the waits it causes."""
    timeout = caller_timeout(headers)
    CALLER_TIMEOUT.set(timeout)
    if timeout is None:
        CALLER_DEADLINE.set(None)
        return
    arrived = time.monotonic() if now is None else now
    CALLER_DEADLINE.set(arrived + max(timeout - ANSWER_MARGIN, timeout / 2))


def within(seconds: float, now: float | None = None) -> float:
    """A deadline `seconds` from now, never past the caller's (time.monotonic())."""
    now = time.monotonic() if now is None else now
    deadline = CALLER_DEADLINE.get()
    return now + seconds if deadline is None else min(now + seconds, deadline)


def batch_budget(budget: float) -> float:
    """A batched call's budget: DEDUCT_BATCH_BUDGET, and at most half its caller's timeout."""
    timeout = CALLER_TIMEOUT.get()
    return budget if timeout is None else min(budget, timeout / 2)
