"""A retry budget: how many attempts, how long in total, and a jittered backoff between them.

Written here rather than taken from a library because the policy is tiny and the order service
must decide per outcome what is safe to retry (only transport failures and 5xx, always with the
same flag); the sleep function is injectable so tests never really sleep.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from shared.config.settings import Settings


@dataclass
class RetryBudget:
    attempts: int  # the first try included
    total_seconds: float
    base_delay: float = 0.2
    max_delay: float = 2.0
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        self._started = self.clock()
        self.used = 0
        self._not_before = 0.0  # the next attempt's least delay, as the server asked

    def retry_after(self, seconds: float) -> None:
        """The server asked for the next attempt no sooner than `seconds` (its Retry-After:
        a lock's queue full behind a busy or stalled holder); an attempt before it would be
        refused the same way and spend an attempt of the budget."""
        self._not_before = max(self._not_before, seconds)

    def remaining_seconds(self) -> float:
        return self.total_seconds - (self.clock() - self._started)

    def next_attempt(self) -> bool:
        """Wait the backoff before an attempt after the first; False when the budget is spent."""
        if self.used >= self.attempts or self.remaining_seconds() <= 0:
            return False
        if self.used > 0:
            # "Full jitter": a random delay up to the exponential cap spreads retries out.
            cap = min(self.max_delay, self.base_delay * 2 ** (self.used - 1))
            delay = max(self.rng.uniform(0, cap), self._not_before)
            self._not_before = 0.0
            if delay >= self.remaining_seconds():
                return False  # no attempt in time that the server would take
            self.sleep(delay)
            if self.remaining_seconds() <= 0:
                return False
        self.used += 1
        return True


@dataclass(frozen=True)
class CallPolicy:
    """How the order service calls the stock service: each attempt's timeout, how many times
    it is tried again (with the same flag), within how many seconds in all, and the base of the
    jittered backoff between attempts (RetryBudget, above)."""

    timeout: float = 5.0
    retries: int = 2
    budget_seconds: float = 20.0
    backoff: float = 0.2

    @classmethod
    def from_settings(cls, settings: Settings) -> CallPolicy:
        return cls(
            settings.stock_call_timeout,
            settings.stock_call_retries,
            settings.stock_call_budget,
            settings.retry_backoff,
        )

    @classmethod
    def patient(cls, timeout: float) -> CallPolicy:
        """The elected reconciler's: one attempt per call, its pass comes back."""
        return cls(timeout, 0, 60.0, 0.0)
