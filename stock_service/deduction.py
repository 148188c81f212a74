"""PUT /reduceStock/{flag}, PUT /voidFlag/{flag} and PUT /returnStock/{flag}, the article's
steps, one function each:

    pre-filter (is the flag live in Redis? if not, what did the stock database decide?) ->
    [combined: lock -> read levels and decided flags -> deduct -> commit -> release] ->
    delete the flags that were decided

The Redis flag is a fast filter, the stock database the authority. A flag in Redis is a live
operation: it goes to the lock, where the decision table (flag_decision) says whether another
attempt decided it already. A flag missing from Redis is answered from the database: deducted
before (`duplicate`), refused (`insufficient`), voided (`voided`), returned (`cancelled`), or
unknown to both (`unknown_flag`: Redis lost it, or it expired; nothing is done, and the order
service, which owns the order, may write the flag again and retry). So a lost flag never turns
a retry into a false `duplicate`.

The requests of this process that wait for the same lock are combined (coordination/combining.py):
one of them takes the lock once for all of them (stock_service/holds.py), stock_service/
decide.py decides each in arrival order under it, one transaction writes every deduction and
return, and each request gets its own answer, as soon as its part of the batch is committed.
DEDUCT_BATCH_MAX=1 serves them one lock hold each, as the article does.

A flag is deleted from Redis only once its operation is decided (deducted, refused, voided),
not when an attempt begins. So an attempt that fails before anything is
committed (lock timeout, lock lost, a dependency down) or whose worker dies in the middle
(SIGKILL, a crash) leaves the flag in place, and the caller's retry with the same flag is
served: no sale is lost. The article deleted the flag first ("whoever deletes it owns the
operation"), which turned the retry of a dead attempt into a `duplicate`."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import redis

from coordination.combining import BatchHandle, Combiner
from coordination.locks import LockBackend
from shared.contract import AS_DEDUCTION, Decided
from shared.errors import DependencyUnavailable
from shared.faults import NO_FAULTS, Faults
from shared.ids import new_id
from shared.redis_client import RedisUnavailable
from shared.timing import Stopwatch
from stock_service.core.model import TransferLeg
from stock_service.core.plan import Adjustment, Decision, Kind, Outcome, Request, Shortfall
from stock_service.holds import Answer, BatchRunner, Hold, LockPolicy
from stock_service.store import StockStore

__all__ = ["DeductionResult", "Outcome", "StockDeduction"]

log = logging.getLogger(__name__)

# One lane per process: a batch takes every request queued behind the one before it, whatever
# goods they buy, and claims the names they need together (see run_batch).
LANE = "deductions"
# A deduction of a flag missing from Redis, answered from the stock database's decision.


class MemberFailed(DependencyUnavailable):
    """One flag of a batched call failed on its own (its part of the commit was rolled back,
    nothing written for it): answered `unavailable` for that flag alone, so the caller asks
    again under the same flag, while the other flags keep their answers."""

    dependency = "stock database"


@dataclass
class DeductionResult:
    outcome: Outcome
    shortfalls: list[Shortfall] = field(default_factory=list)
    flows: list[dict[str, Any]] = field(default_factory=list)  # those a deduction committed
    allocations: list[tuple[str, str, int]] = field(default_factory=list)  # goods, where, units
    backordered: dict[str, int] = field(default_factory=dict)  # goods id -> units still owed
    hold: Hold | None = None  # None: answered before the lock, from Redis and the database
    timings: Stopwatch = field(default_factory=Stopwatch)


class StockDeduction:
    def __init__(
        self,
        store: StockStore,
        redis_client: redis.Redis,
        locks: LockBackend,
        policy: LockPolicy,
        faults: Faults = NO_FAULTS,
        events: bool = True,
    ) -> None:
        """`events`: every ledger line's stock events written to the outbox (STOCK_EVENTS)."""
        self.store = store
        self.redis = redis_client
        self.locks = locks
        self.lock_timeout = policy.timeout
        self.runner = BatchRunner(store, locks, policy, self.forget_flags, faults, events)
        self.combiner: Combiner[Request, Answer] = Combiner(self.runner.run_batch, policy.batch_max)

    @property
    def faults(self) -> Faults:
        return self.runner.faults

    @faults.setter
    def faults(self, faults: Faults) -> None:
        """Fault points, here and under the lock (tests install theirs after start-up)."""
        self.runner.faults = faults

    def reduce(self, request: Request) -> DeductionResult:
        """One deduction: its flag, lines, `hold` (a hold's deduction, genOrder's
        payWithinSeconds: its units are counted as held until the order service says it was
        paid, or its stock comes back), named locations and fill."""
        flag = request.flag
        watch = Stopwatch()
        live = self.flag_live(flag)
        watch.lap("prefilter")
        if not live:
            decided = self.store.decision(flag)
            watch.lap("decision")
            outcome = AS_DEDUCTION[Decided(decided)] if decided else Outcome.UNKNOWN_FLAG
            log.info("flag %s not in redis; the stock database says %s", flag, decided)
            return DeductionResult(outcome, timings=watch)
        self.faults.fire("delay_before_deduct")
        submitted = time.perf_counter()
        decision, held = self._decide(request)
        watch.laps["queue"] = max(held.started - submitted, 0.0) * 1000
        watch.laps.update(held.stages_ms)
        if decision.outcome is not Outcome.DEDUCTED:
            log.info("flag %s: %s %s", flag, decision.outcome.value, decision.shortfalls or "")
        self.faults.fire("delay_after_commit")
        return _result(decision, held, watch)

    def reduce_many(self, wanted: list[Request]) -> list[DeductionResult | DependencyUnavailable]:
        """PUT /reduceStock with many flags (the order service's batch): each flag its own
        lines, its own decision and rows, as if each had come alone, at the cost of one Redis
        read, one database read for the flags not live, and one lock claim for the rest,
        served together (one hold, one commit; a batch that does not get every name in time
        is split as a combined one is). A flag's failure (its lock not had in time, the lock
        lost) is its own result; Redis down fails the whole call (RedisUnavailable)."""
        watch = Stopwatch()
        flags = [request.flag for request in wanted]
        live = self.flags_live(flags)
        watch.lap("prefilter")
        results: list[DeductionResult | DependencyUnavailable | None] = [None] * len(wanted)
        dead = [i for i, is_live in enumerate(live) if not is_live]
        if dead:
            decided = self.store.decisions([flags[i] for i in dead])
            watch.lap("decision")
            for i in dead:
                found = decided.get(flags[i])
                said = AS_DEDUCTION[Decided(found)] if found else Outcome.UNKNOWN_FLAG
                results[i] = DeductionResult(said, timings=watch)
        todo = [i for i, is_live in enumerate(live) if is_live]
        if todo:
            self.faults.fire("delay_before_deduct")
            requests = [wanted[i] for i in todo]
            handle: BatchHandle[Request, Answer] = BatchHandle.group(
                requests, [time.monotonic() + self.lock_timeout] * len(requests)
            )
            outcomes = handle.outcomes(self.runner.run_batch(LANE, requests, handle))
            for i, outcome in zip(todo, outcomes, strict=True):
                if isinstance(outcome, DependencyUnavailable):
                    results[i] = outcome
                elif isinstance(outcome, Exception):  # this flag's own failure: its result
                    log.error("flag %s failed: %r", flags[i], outcome)
                    results[i] = MemberFailed(f"this flag's deduction failed ({outcome!r})")
                elif isinstance(outcome, BaseException):
                    raise outcome
                else:
                    results[i] = _result(*outcome, watch)
            self.faults.fire("delay_after_commit")
        return [r for r in results if r is not None]

    def _decide(self, request: Request) -> Answer:
        """Under the lock of its names: combined with the requests of this process waiting for
        the same lane, or alone (the baseline without a lock)."""
        if self.locks.excludes:
            return self.combiner.submit(LANE, request, self.lock_timeout)
        handle: BatchHandle[Request, Answer] = BatchHandle.alone(
            request, time.monotonic() + self.lock_timeout
        )
        [answer] = self.runner.run_batch(LANE, [request], handle)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def cancel(self, flag: str) -> Outcome:
        """PUT /returnStock/{flag}: the stock of a cancelled order comes back, exactly once.

        - No decision yet: the flag is voided first (Seata's "empty rollback", recorded): a
          deduction of it that arrives later is refused (its "suspension"). If a deduction
          won the race to the decision, its stock is returned instead.
        - Deducted: a return of exactly its flows, under the lock of its goods and their fence,
          served with the deductions of the same hold in arrival order (combining), recorded
          as return rows and the flag's decision moved to returned, in one transaction.
        - Returned before: answered the same, nothing returned twice (idempotence).
        Returns RETURNED or VOIDED."""
        decided = self.store.decision(flag) or self.store.void(
            flag, "voided: cancelled before it was deducted"
        )
        if decided == Decided.DEDUCTED:
            # Each unit goes back where it came from: its lines and their locations, read
            # before the hold (a deducted flag's flows and allocations never change; what
            # its backordered lines were handed may, until the hold: read again there).
            lines, parts, backordered = self.store.returning(flag)
            request = Request(flag, lines, Kind.RETURN, parts=parts, backorder=backordered)
            decision, _hold = self._decide(request)
            outcome = decision.outcome
        else:  # returned before; or refused or voided: nothing was deducted
            outcome = Outcome.RETURNED if decided == Decided.RETURNED else Outcome.VOIDED
        log.info("cancel %s: %s", flag, outcome.value)
        self.forget_flags([flag])
        return outcome

    def adjust(self, adjustment: Adjustment) -> Decision:
        """POST /stock/{goodsId}/adjustments (and the admin seed, an adjustment of reason
        `set`): under the goods id's lock and fence, combined with the deductions waiting for
        it, decided in arrival order against the level they leave; one ledger line, its stock
        events in the same commit."""
        request = Request(new_id(), {adjustment.goods_id: 0}, Kind.ADJUST, adjust=adjustment)
        decision, _hold = self._decide(request)
        if decision.outcome is Outcome.ADJUSTED:
            self.store.known(adjustment.goods_id)
        return decision

    def transfer(self, leg: TransferLeg) -> Decision:
        """A transfer's step (POST /transfers, .../receive, .../cancel), under its goods id's
        lock and fence, combined with the deductions waiting for it: one ledger leg, once."""
        request = Request(leg.transfer_id, {leg.goods_id: 0}, Kind.TRANSFER, transfer=leg)
        decision, _hold = self._decide(request)
        return decision

    def release_hold(self, flag: str) -> bool:
        """PUT /holds/{flag}/release: a hold was paid; its units are no longer held."""
        released = self.store.release_hold(flag)
        log.info("hold %s: %s", flag, "released" if released else "nothing to release")
        return released

    def void(self, flag: str, reason: str) -> str:
        """Decide the flag as voided unless it was decided; its decision after (voided, or
        what it was). A deduction of it that arrives later is refused (`voided`)."""
        decided = self.store.void(flag, reason)
        log.info("void %s: %s", flag, decided)
        self.forget_flags([flag])
        return decided

    def flags_live(self, flags: list[str]) -> list[bool]:
        """The pre-filter of many flags in one Redis command (MGET)."""
        try:
            return [value is not None for value in self.redis.mget(flags)]
        except redis.RedisError as exc:
            raise RedisUnavailable(str(exc)) from exc

    def flag_live(self, flag: str) -> bool:
        """Step 1, the Redis pre-filter: the order service wrote the flag, and no attempt has
        decided its operation yet (a decided one deletes it)."""
        try:
            return bool(self.redis.exists(flag))
        except redis.RedisError as exc:
            raise RedisUnavailable(str(exc)) from exc

    def forget_flags(self, flags: list[str]) -> None:
        """The last step: the operations of these flags are decided, so a later retry is
        answered from the database at the pre-filter. One DEL for a whole batch. If Redis is
        down the flags stay, and a retry is decided again under the lock (the decision table
        answers it)."""
        if not flags:
            return
        try:
            self.redis.delete(*flags)
        except redis.RedisError as exc:
            log.warning("could not delete %d decided flags in redis: %s", len(flags), exc)


def _result(decision: Decision, hold: Hold, watch: Stopwatch) -> DeductionResult:
    return DeductionResult(
        decision.outcome,
        decision.shortfalls,
        decision.flows,
        decision.allocations,
        decision.backordered,
        hold,
        watch,
    )
