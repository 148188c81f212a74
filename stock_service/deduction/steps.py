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
one of them takes the lock once for all of them (holds.py), decide.py decides each in arrival
order under it, one transaction writes every deduction and return, and each request gets its own
answer, as soon as its part of the batch is committed. DEDUCT_BATCH_MAX=1 serves them one lock
hold each, as the article does. A request waits for its lock until LOCK_TIMEOUT, never past its
caller's deadline (caller_deadline.py), and past LOCK_QUEUE_MAX waiters of one lock in this
process a newcomer is refused at once (lock_queue.py). The batched PUT /reduceStock answers every
flag within its budget (batched_call.py).

A flag is deleted from Redis only once its operation is decided (deducted, refused, voided),
not when an attempt begins. So an attempt that fails before anything is
committed (lock timeout, lock lost, a dependency down) or whose worker dies in the middle
(SIGKILL, a crash) leaves the flag in place, and the caller's retry with the same flag is
served: no sale is lost. The article deleted the flag first ("whoever deletes it owns the
operation"), which turned the retry of a dead attempt into a `duplicate`."""

from __future__ import annotations

import logging
import time

import redis

from coordination.combining import BatchHandle, Combiner
from coordination.locks import LockBackend
from shared.contract import AS_DEDUCTION, Decided
from shared.errors import DependencyUnavailable
from shared.faults import NO_FAULTS, Faults
from shared.ids import new_id
from shared.redis_client import RedisUnavailable
from shared.timing import Stopwatch
from stock_service.core import Adjustment, Decision, Kind, Outcome, Request, TransferLeg
from stock_service.deduction import caller_deadline
from stock_service.deduction.batched_call import NotAttempted, reduce_many
from stock_service.deduction.holds import LANE, Answer, BatchRunner, LockPolicy
from stock_service.deduction.result import DeductionResult, result_of
from stock_service.storage import StockStore

__all__ = ["LANE", "DeductionResult", "Outcome", "StockDeduction"]

log = logging.getLogger(__name__)


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
        return result_of(decision, held, watch)

    def reduce_many(
        self, wanted: list[Request], budget: float | None
    ) -> list[DeductionResult | DependencyUnavailable | NotAttempted]:
        """PUT /reduceStock with many flags, each answered within `budget` seconds (None: the
        default, DEDUCT_BATCH_BUDGET_DEFAULT), stock_service/deduction/batched_call.py."""
        return reduce_many(self, wanted, budget)

    def _decide(self, request: Request) -> Answer:
        """Under the lock of its names: combined with the requests of this process waiting for
        the same lane, or alone (the baseline without a lock)."""
        queues = self.runner.queues
        queues.join(request, self.runner.names_of(request), request.lines)  # or LockQueueFull
        try:
            # Its own wait: LOCK_TIMEOUT, never past its caller's deadline.
            deadline = caller_deadline.within(self.lock_timeout)
            if self.locks.excludes:
                return self.combiner.submit(LANE, request, deadline - time.monotonic())
            handle: BatchHandle[Request, Answer] = BatchHandle.alone(request, deadline)
            [answer] = self.runner.run_batch(LANE, [request], handle)
            if isinstance(answer, BaseException):
                raise answer
            return answer
        finally:
            queues.leave(request)

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
