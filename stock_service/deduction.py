"""PUT /reduceStock/{flag}, the article's steps, one function each:

    pre-filter (delete the flag in Redis) -> check the flows -> lock -> deduct -> release

The Redis flag is a fast filter, the stock-flow table the authority. When an attempt fails
before anything is committed (lock timeout, a dependency down), the flag is put back, so the
caller's retry with the same flag is served instead of being taken for a duplicate.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass, field

import redis
from sqlalchemy.exc import IntegrityError

from shared.db import DatabaseUnavailable
from shared.locks import LockBackend, LockError, lock_names
from shared.timing import Stopwatch
from stock_service.faults import NO_FAULTS, Faults
from stock_service.store import Shortfall, StockStore

log = logging.getLogger(__name__)


class Outcome(enum.StrEnum):
    DEDUCTED = "deducted"
    DUPLICATE = "duplicate"
    INSUFFICIENT = "insufficient"


class RedisUnavailable(Exception):
    dependency = "redis"


@dataclass
class DeductionResult:
    outcome: Outcome
    shortfalls: list[Shortfall] = field(default_factory=list)
    lock_nodes: dict[str, str] = field(default_factory=dict)
    tokens: dict[str, int | None] = field(default_factory=dict)
    timings: Stopwatch = field(default_factory=Stopwatch)


class StockDeduction:
    def __init__(
        self,
        store: StockStore,
        redis_client: redis.Redis,
        locks: LockBackend,
        lock_scope: str,
        lock_timeout: float,
        flag_ttl: int,
        faults: Faults = NO_FAULTS,
    ) -> None:
        self.store = store
        self.redis = redis_client
        self.locks = locks
        self.lock_scope = lock_scope
        self.lock_timeout = lock_timeout
        self.flag_ttl = flag_ttl
        self.faults = faults

    def reduce(self, flag: str, lines: dict[str, int]) -> DeductionResult:
        watch = Stopwatch()
        taken = self.take_flag(flag)
        watch.lap("prefilter")
        if not taken:
            log.info("flag %s not in redis: duplicate", flag)
            return DeductionResult(Outcome.DUPLICATE, timings=watch)
        try:
            seen = self.store.has_flows(flag)
            watch.lap("flowcheck")
            if seen:
                log.info("flag %s already has flows: duplicate", flag)
                return DeductionResult(Outcome.DUPLICATE, timings=watch)
            self.faults.fire("delay_before_deduct")
            result = self.deduct_under_lock(flag, lines, watch)
            self.faults.fire("delay_after_commit")
            return result
        except (LockError, DatabaseUnavailable):
            self.restore_flag(flag)
            raise

    def take_flag(self, flag: str) -> bool:
        """Step 1, the Redis pre-filter: whoever deletes the flag owns the operation."""
        try:
            return bool(self.redis.delete(flag))
        except redis.RedisError as exc:
            raise RedisUnavailable(str(exc)) from exc

    def restore_flag(self, flag: str) -> None:
        try:
            self.redis.set(flag, "orderId", ex=self.flag_ttl, nx=True)
        except redis.RedisError:
            # The stock-flow check still stops a double deduction; the retry will be told
            # `duplicate` and the caller's polling decides.
            log.warning("could not restore flag %s in redis", flag)

    def deduct_under_lock(
        self, flag: str, lines: dict[str, int], watch: Stopwatch
    ) -> DeductionResult:
        """Step 3: lock, read-check-write every line, insert the flows, commit, release."""
        names = lock_names(lines, self.lock_scope)
        log.debug("flag %s: waiting for %s", flag, names)
        with self.locks.hold(names, self.lock_timeout) as lease:
            watch.lap("lock")
            log.debug("flag %s: holding %s, tokens %s", flag, lease.details, lease.tokens)
            try:
                shortfalls = self.store.deduct(flag, lines, lease)
            except IntegrityError:
                # The unique (flag, goods id) constraint: another attempt got here first.
                return DeductionResult(Outcome.DUPLICATE, timings=watch)
            finally:
                watch.lap("deduct")
        watch.lap("release")
        if shortfalls:
            log.info("flag %s: insufficient stock %s", flag, shortfalls)
            return DeductionResult(Outcome.INSUFFICIENT, shortfalls=shortfalls, timings=watch)
        log.info("flag %s deducted %s under %s", flag, lines, lease.details or self.locks.name)
        return DeductionResult(
            Outcome.DEDUCTED, lock_nodes=lease.details, tokens=lease.tokens, timings=watch
        )
