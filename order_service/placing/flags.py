"""The operation flags in Redis, written by the order service for each order it places and by
the elected reconciler for each it deducts again: they let the stock service tell a live
operation from a retry of a decided one. A SET is idempotent, so a write is tried again for a
few seconds (FLAG_WRITE_SECONDS): a Redis restarting or failing over (its sentinels: 3.4 s
measured) would otherwise leave every order placed meanwhile without its deduction."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import redis

from order_service.placing.retry import RetryBudget

log = logging.getLogger(__name__)
ATTEMPTS = 10  # within FLAG_WRITE_SECONDS


class FlagWriter:
    def __init__(
        self,
        client: redis.Redis,
        ttl: int,
        seconds: float,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.redis = client
        self.ttl = ttl
        self.seconds = seconds
        self.sleep = sleep

    def write(self, flags: list[str], in_trouble: Callable[[], None] = lambda: None) -> bool:
        """Every flag written (one pipeline); False when Redis stays down. `in_trouble`: called
        before each try after the first (a batch lets the next one start meanwhile)."""
        budget = RetryBudget(ATTEMPTS, self.seconds, 0.1, 1.0, self.sleep)
        while budget.next_attempt():
            if budget.used > 1:
                in_trouble()
            try:
                pipe = self.redis.pipeline(transaction=False)
                for flag in flags:
                    pipe.set(flag, "orderId", ex=self.ttl)
                pipe.execute()
                return True
            except redis.RedisError as exc:
                log.warning("redis unavailable writing %d flags: %s", len(flags), exc)
        return False
