"""PUT /reduceStock with many flags (the order service's batch of orders), answered when each
flag is decided: the call answers every flag within its budget (DEDUCT_BATCH_BUDGET, and at
most half its caller's X-Caller-Timeout-Ms). The flags whose locks are had within it are
decided, committed and answered; a flag whose lock is not had by then, or whose lock's queue in
this process is full (LOCK_QUEUE_MAX), is answered `not_attempted`: nothing written, its flag
still live in Redis, for the order service to send again (alone, or in a later batch). So a
lock held elsewhere (a paused or slow holder) never holds up the flags beside it, in time any
more than in content. TigerBeetle answers every event of a batch on its own, and nothing in a
batch waits for a lock: the same rule, for a batch whose locks are per goods id.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

from coordination.combining import BatchHandle
from coordination.locks import LockTimeout
from shared.config.settings import DEDUCT_BATCH_BUDGET_DEFAULT
from shared.contract import AS_DEDUCTION, Decided
from shared.errors import DependencyUnavailable
from shared.faults import Faults
from shared.timing import Stopwatch
from stock_service.core import Outcome, Request
from stock_service.deduction import caller_deadline
from stock_service.deduction.holds import LANE, Answer, BatchRunner
from stock_service.deduction.lock_queue import LockQueueFull
from stock_service.deduction.result import DeductionResult, result_of
from stock_service.storage import StockStore

log = logging.getLogger(__name__)


class MemberFailed(DependencyUnavailable):
    """One flag of a batched call failed on its own (its part of the commit was rolled back,
    nothing written for it): answered `unavailable` for that flag alone, so the caller asks
    again under the same flag, while the other flags keep their answers."""

    dependency = "stock database"


@dataclass(frozen=True)
class NotAttempted:
    """A flag of a batched call not attempted: its lock was not had within the call's budget,
    or its lock's queue was full (`lock`, `goods_id`, `retry_after`). Nothing was written and
    its flag is still live: retryable under the same flag."""

    error: str
    lock: str | None = None
    goods_id: str | None = None
    retry_after: int | None = None


class Deducting(Protocol):
    """What a batched call needs of StockDeduction."""

    store: StockStore
    runner: BatchRunner
    lock_timeout: float

    @property
    def faults(self) -> Faults: ...

    def flags_live(self, flags: list[str]) -> list[bool]: ...


def reduce_many(
    deduction: Deducting, wanted: list[Request], budget: float | None
) -> list[DeductionResult | DependencyUnavailable | NotAttempted]:
    """Each flag its own lines, its own decision and rows, as if each had come alone, at the
    cost of one Redis read, one database read for the flags not live, and one lock claim for
    the rest, served together where their locks are had within `budget` seconds (one hold, one
    commit; a batch that does not get every name within the patience is split as a combined
    one is, and its rest waits until the budget). A flag's failure (its lock not had in time,
    the lock lost) is its own result; Redis down fails the whole call (RedisUnavailable)."""
    if not wanted:
        return []
    watch = Stopwatch()
    flags = [request.flag for request in wanted]
    live = deduction.flags_live(flags)
    watch.lap("prefilter")
    results: list[DeductionResult | DependencyUnavailable | NotAttempted | None]
    results = [None] * len(wanted)
    dead = [i for i, is_live in enumerate(live) if not is_live]
    if dead:
        decided = deduction.store.decisions([flags[i] for i in dead])
        watch.lap("decision")
        for i in dead:
            found = decided.get(flags[i])
            said = AS_DEDUCTION[Decided(found)] if found else Outcome.UNKNOWN_FLAG
            results[i] = DeductionResult(said, timings=watch)
    todo = []
    queues = deduction.runner.queues
    for i in (i for i, is_live in enumerate(live) if is_live):
        try:
            queues.join(wanted[i], deduction.runner.names_of(wanted[i]), wanted[i].lines)
            todo.append(i)
        except LockQueueFull as full:
            results[i] = NotAttempted(full.answer(), full.lock, full.goods_id, full.retry_after)
    if todo:
        deduction.faults.fire("delay_before_deduct")
        requests = [wanted[i] for i in todo]
        budget = DEDUCT_BATCH_BUDGET_DEFAULT if budget is None else budget
        seconds = min(deduction.lock_timeout, caller_deadline.batch_budget(budget))
        deadline = caller_deadline.within(seconds)
        handle: BatchHandle[Request, Answer] = BatchHandle.group(
            requests, [deadline] * len(requests)
        )
        try:
            outcomes = handle.outcomes(deduction.runner.run_batch(LANE, requests, handle))
        finally:
            for request in requests:
                queues.leave(request)
        for i, outcome in zip(todo, outcomes, strict=True):
            if isinstance(outcome, LockTimeout):  # not had within the budget: nothing written
                log.info("flag %s not attempted: %s", flags[i], outcome)
                results[i] = NotAttempted(f"not attempted within {seconds:g} s: {outcome}")
            elif isinstance(outcome, DependencyUnavailable):
                results[i] = outcome
            elif isinstance(outcome, Exception):  # this flag's own failure: its result
                log.error("flag %s failed: %r", flags[i], outcome)
                results[i] = MemberFailed(f"this flag's deduction failed ({outcome!r})")
            elif isinstance(outcome, BaseException):
                raise outcome
            else:
                results[i] = result_of(*outcome, watch)
        deduction.faults.fire("delay_after_commit")
    return [r for r in results if r is not None]
