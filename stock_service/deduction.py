"""PUT /reduceStock/{flag}, the article's steps, one function each:

    pre-filter (is the flag in Redis?) -> [combined: lock -> check the flows -> deduct ->
    commit -> release] -> delete the flags that were decided

The Redis flag is a fast filter, the stock-flow table the authority. The requests of this
process that wait for the same lock are combined (shared/combining.py): one of them takes the
lock once for all of them, the store checks their flags against the stock flow and decides each
in arrival order (stock_service/batch.py), one transaction writes every deduction, and each
request gets its own answer. DEDUCT_BATCH_MAX=1 serves them one lock hold each, as the article
does.

A flag is deleted only once its operation is decided (deducted, duplicate or insufficient, all
committed or read under the lock), not when an attempt begins. So an attempt that fails before
anything is committed (lock timeout, lock lost, a dependency down) or whose worker dies in the
middle (SIGKILL, a crash) leaves the flag in place, and the caller's retry with the same flag
is served: no sale is lost. The article deleted the flag first ("whoever deletes it owns the
operation"), which turned the retry of a dead attempt into a `duplicate`. Two attempts of one
flag may now both pass the filter (a retry while the first still runs); they meet under the
lock, where the stock flow (and its unique (flag, goods id) constraint) lets one deduct and
answers the other `duplicate`."""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import redis

from shared.combining import BatchHandle, Combiner
from shared.locks import LockBackend, LockTimeout, lock_names
from shared.locks.base import Claim
from shared.metrics import BATCH_SIZE, LOCK_HOLD, LOCK_WAIT
from shared.timing import Stopwatch
from stock_service.batch import Decision, Outcome, Request, Shortfall
from stock_service.faults import NO_FAULTS, Faults
from stock_service.store import StockStore

__all__ = ["DeductionResult", "Outcome", "RedisUnavailable", "StockDeduction"]

log = logging.getLogger(__name__)

# One lane per process: a batch takes every request queued behind the one before it, whatever
# goods they buy, and claims the names they need together (see run_batch).
LANE = "deductions"


class RedisUnavailable(Exception):
    dependency = "redis"


@dataclass(frozen=True)
class Hold:
    """One lock hold, shared by the requests of its batch."""

    size: int
    tokens: dict[str, int | None]
    nodes: dict[str, str]
    started: float  # perf_counter when the leader began to wait for the lock
    stages_ms: dict[str, float]  # lock (waiting for it), deduct (read-check-write, commit)


@dataclass
class DeductionResult:
    outcome: Outcome
    shortfalls: list[Shortfall] = field(default_factory=list)
    hold: Hold | None = None  # None: answered before the lock (a duplicate at the pre-filter)
    timings: Stopwatch = field(default_factory=Stopwatch)

    @property
    def tokens(self) -> dict[str, int | None]:
        return self.hold.tokens if self.hold else {}

    @property
    def lock_nodes(self) -> dict[str, str]:
        return self.hold.nodes if self.hold else {}


class StockDeduction:
    def __init__(
        self,
        store: StockStore,
        redis_client: redis.Redis,
        locks: LockBackend,
        lock_scope: str,
        lock_timeout: float,
        faults: Faults = NO_FAULTS,
        batch_max: int = 32,
        patience: float = 0.1,
    ) -> None:
        self.store = store
        self.redis = redis_client
        self.locks = locks
        self.lock_scope = lock_scope
        self.lock_timeout = lock_timeout
        self.faults = faults
        self.patience = patience
        self.batch_max = batch_max
        self.combiner: Combiner[Request, tuple[Decision, Hold]] = Combiner(
            self.run_batch, batch_max
        )

    def reduce(self, flag: str, lines: dict[str, int]) -> DeductionResult:
        watch = Stopwatch()
        pending = self.flag_pending(flag)
        watch.lap("prefilter")
        if not pending:
            log.info("flag %s not in redis: duplicate", flag)
            return DeductionResult(Outcome.DUPLICATE, timings=watch)
        self.faults.fire("delay_before_deduct")
        submitted = time.perf_counter()
        request = Request(flag, lines)
        if self.locks.excludes:
            decision, hold = self.combiner.submit(LANE, request, self.lock_timeout)
        else:  # no lock, nothing to combine under: the baseline runs each request alone
            [answer] = self.run_batch(LANE, [request], self.lock_timeout)
            if isinstance(answer, BaseException):
                raise answer
            decision, hold = answer
        watch.laps["queue"] = max(hold.started - submitted, 0.0) * 1000
        watch.laps.update(hold.stages_ms)
        if decision.outcome is Outcome.DUPLICATE:
            log.info("flag %s already has flows: duplicate", flag)
        elif decision.outcome is Outcome.INSUFFICIENT:
            log.info("flag %s: insufficient stock %s", flag, decision.shortfalls)
        self.faults.fire("delay_after_commit")
        return DeductionResult(decision.outcome, decision.shortfalls, hold, watch)

    def flag_pending(self, flag: str) -> bool:
        """Step 1, the Redis pre-filter: the order service wrote the flag, and no attempt has
        decided its operation yet (a decided one deletes it)."""
        try:
            return bool(self.redis.exists(flag))
        except redis.RedisError as exc:
            raise RedisUnavailable(str(exc)) from exc

    def forget_flags(self, flags: list[str]) -> None:
        """The last step: the operations of these flags are decided, so a later retry is told
        `duplicate` at the pre-filter. One DEL for the whole batch, after the lock is released.
        If Redis is down the flags stay, and a retry is told `duplicate` by the stock flow."""
        if not flags:
            return
        try:
            self.redis.delete(*flags)
        except redis.RedisError as exc:
            log.warning("could not delete %d decided flags in redis: %s", len(flags), exc)

    def run_batch(
        self,
        _key: Hashable,
        requests: Sequence[Request],
        timeout: float,
        handle: BatchHandle[Request, tuple[Decision, Hold]] | None = None,
    ) -> list[tuple[Decision, Hold] | BaseException]:
        """One lock claim for every request of the batch, on the names they need together.

        Usually every name is held within the patience, and one hold serves the whole batch,
        with the requests that queued meanwhile and need no other name (late joiners). If not
        (a name held by a stalled or dead holder elsewhere), the requests whose names are all
        held are served at once, the names only they needed are released, the lane is handed
        on so this process's next batch can start, and the rest of the batch keeps waiting, on
        its own, until its timeout: one slow lock never stalls other goods."""
        started = time.perf_counter()
        now = time.monotonic()
        deadline = now + timeout
        requests = list(requests)
        needs = [self.names_of(r) for r in requests]
        with self.locks.claim(frozenset().union(*needs)) as claim:
            held = claim.wait(min(deadline, now + self.patience))
            if handle is not None and all(need <= held for need in needs):
                late = handle.take(
                    lambda r: self.names_of(r) <= held, self.batch_max - len(requests)
                )
                requests += late
                needs += [self.names_of(r) for r in late]
            results: list[tuple[Decision, Hold] | BaseException | None] = [None] * len(requests)
            ready = [i for i, need in enumerate(needs) if need <= held]
            rest = [i for i, need in enumerate(needs) if not need <= held]
            if ready:
                self._serve(claim, requests, needs, ready, results, started)
            if rest:
                claim.release(held - frozenset().union(*(needs[i] for i in rest)))
                if handle is not None:
                    handle.detach()
                log.info(
                    "batch split after %.0f ms: %d served, %d wait for %s",
                    self.patience * 1000,
                    len(ready),
                    len(rest),
                    sorted(frozenset().union(*(needs[i] for i in rest)) - held),
                )
                try:
                    held = claim.wait(deadline)
                    ready = [i for i in rest if needs[i] <= held]
                    if ready:
                        self._serve(claim, requests, needs, ready, results, time.perf_counter())
                except BaseException as exc:  # the rest's failure, not the served part's
                    for i in rest:
                        results[i] = exc
                for i in rest:
                    if results[i] is None:
                        missing = sorted(needs[i] - held)
                        results[i] = LockTimeout(
                            f"lock {missing[0]!r} not acquired within {timeout:.1f}s"
                        )
        self.forget_flags(
            [
                r.flag
                for r, result in zip(requests, results, strict=True)
                if isinstance(result, tuple)
            ]
        )
        return [r for r in results if r is not None]

    def names_of(self, request: Request) -> frozenset[str]:
        return frozenset(lock_names(request.lines, self.lock_scope))

    def _serve(
        self,
        claim: Claim,
        requests: Sequence[Request],
        needs: list[frozenset[str]],
        chosen: list[int],
        results: list[tuple[Decision, Hold] | BaseException | None],
        started: float,
    ) -> None:
        """The read-check-write of the chosen requests, under the names the claim holds."""
        names = frozenset().union(*(needs[i] for i in chosen))
        lease = claim.lease(names)
        locked = time.perf_counter()
        decisions = self.store.deduct_batch([requests[i] for i in chosen], lease)
        deducted = time.perf_counter()
        LOCK_WAIT.labels(self.locks.name).observe(locked - started)
        LOCK_HOLD.labels(self.locks.name).observe(deducted - locked)
        BATCH_SIZE.observe(len(chosen))
        hold = Hold(
            size=len(chosen),
            tokens=dict(lease.tokens),
            nodes=dict(lease.details),
            started=started,
            stages_ms={"lock": (locked - started) * 1000, "deduct": (deducted - locked) * 1000},
        )
        for i, decision in zip(chosen, decisions, strict=True):
            results[i] = (decision, hold)
        outcomes = Counter(d.outcome.value for d in decisions)
        log.info(
            "hold of %s (tokens %s): batch of %d, %s; flags %s",
            sorted(names),
            sorted(set(hold.tokens.values()), key=str),
            hold.size,
            dict(outcomes),
            " ".join(requests[i].flag for i in chosen),
        )
