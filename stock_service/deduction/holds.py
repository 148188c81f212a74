"""One lock claim for a batch of combined requests (deductions and returns): wait for the
names they need, serve under them what is held, answer each request as soon as its part is
committed, and carry what is still waited for on, each request until its own deadline.

Usually every name is held within the patience, and one hold serves the whole batch, with the
requests that queued meanwhile and need no other name (late joiners). If not (a name held by a
stalled or dead holder elsewhere), the requests whose names are all held are served and
answered at once, the names only they needed released, the lane handed on, and the rest waits
in the thread of one of its own, each request until its deadline, holding the names it has for
`partial_hold` at most: one slow lock never stalls other goods, nor a committed request.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from coordination.combining import BatchHandle
from coordination.locks import (
    Lease,
    LockBackend,
    LockLost,
    LockTimeout,
    LockUnavailable,
    lock_names,
)
from coordination.locks.base import Claim
from shared.config.settings import DEDUCT_BATCH_BUDGET_DEFAULT
from shared.errors import DependencyUnavailable
from shared.faults import NO_FAULTS, Faults
from shared.metrics import BATCH_SIZE, LOCK_HOLD, LOCK_WAIT
from stock_service.core import Decision, Request
from stock_service.deduction.decide import decide_batch
from stock_service.deduction.lock_queue import LockQueues
from stock_service.storage import StockStore

log = logging.getLogger(__name__)

# One lane per process: a batch takes every request queued behind the one before it, whatever
# goods they buy, and claims the names they need together (see run_batch).
LANE = "deductions"
Answer = tuple[Decision, "Hold"]
Results = list["Answer | BaseException | None"]


@dataclass(frozen=True)
class Hold:
    """One lock hold, shared by the requests of its batch."""

    size: int
    tokens: dict[str, int | None]
    nodes: dict[str, str]
    started: float  # perf_counter when the leader began to wait for the lock
    stages_ms: dict[str, float]  # lock (waiting for it), deduct (read-check-write, commit)


@dataclass(frozen=True)
class LockPolicy:
    """How deductions use the lock: its scope (a lock per goods id, or one for all), how long a
    request waits for it, whether writes are fenced, how many requests share a hold, and how
    long a batch waits for all its names before it serves those it holds (holds.py), and the
    highest level an adjustment may leave."""

    scope: str = "sku"
    timeout: float = 10.0
    fencing: bool = True
    batch_max: int = 32
    patience: float = 0.1
    max_level: int | None = None
    queue_max: int | None = None  # waiters of one lock in this process (lock_queue.py)
    # How long a request waiting for a name may hold the others it needs (_serve_rest).
    partial_hold: float = DEDUCT_BATCH_BUDGET_DEFAULT


class BatchRunner:
    def __init__(
        self,
        store: StockStore,
        locks: LockBackend,
        policy: LockPolicy,
        forget_flags: Callable[[list[str]], None],
        faults: Faults = NO_FAULTS,
        events: bool = True,
    ) -> None:
        self.store = store
        self.locks = locks
        self.lock_scope = policy.scope
        self.fencing = policy.fencing
        self.batch_max = policy.batch_max
        self.patience = policy.patience
        self.partial_hold = policy.partial_hold
        self.max_level = policy.max_level
        self.forget_flags = forget_flags
        self.faults = faults
        self.events = events
        # Each request counts as a waiter of its names until they are held (_serve).
        self.queues = LockQueues(policy.queue_max, locks.name)

    def run_batch(
        self,
        _key: Hashable,
        requests: Sequence[Request],
        handle: BatchHandle[Request, Answer],
    ) -> list[Answer | BaseException]:
        """One lock claim for every request of the batch, on the names they need together (the
        module's docstring says how a batch that does not get them all is split)."""
        started = time.perf_counter()
        requests = list(requests)
        needs = [self.names_of(r) for r in requests]
        results: Results = [None] * len(requests)
        claim = self.locks.new_claim(sorted(frozenset().union(*needs)))
        handed_over = False
        try:
            held = self._first_wait(claim, handle.deadlines)
            if all(need <= held for need in needs):
                late = handle.take(
                    lambda r: self.names_of(r) <= held, self.batch_max - len(requests)
                )
                requests += late
                needs += [self.names_of(r) for r in late]
                results += [None] * len(late)
            ready = [i for i, need in enumerate(needs) if need <= held]
            rest = [i for i, need in enumerate(needs) if not need <= held]
            if ready:
                self._serve(claim, requests, needs, ready, results, started)
            if rest:
                self._answer_now(requests, ready, results, handle)
                handle.detach()
                log.info(
                    "batch split after %.0f ms: %d served, %d wait for %s",
                    self.patience * 1000,
                    len(ready),
                    len(rest),
                    sorted(frozenset().union(*(needs[i] for i in rest)) - held),
                )
                deadlines = handle.deadlines
                handed_over = True

                def serve_rest() -> None:
                    try:
                        self._serve_rest(claim, requests, needs, deadlines, rest, results, handle)
                    finally:
                        claim.release_all()

                if any(handle.leads(i) for i in rest):
                    serve_rest()  # this thread's own request waits: it carries on itself
                else:
                    handle.carry_on(rest, serve_rest)
                return [a if a is not None else LockTimeout("answered apart") for a in results]
        finally:
            if not handed_over:
                claim.release_all()
        self.forget_flags(
            [r.flag for r, a in zip(requests, results, strict=True) if isinstance(a, tuple)]
        )
        return [a if a is not None else LockTimeout("not served") for a in results]

    def _first_wait(self, claim: Claim, deadlines: list[float]) -> frozenset[str]:
        """The names held within the patience. A lock service reconnecting (a ZooKeeper
        election) is waited for in the requests' own time: a deduction then is not voided."""
        try:
            return claim.wait(min(max(deadlines), time.monotonic() + self.patience))
        except LockUnavailable:
            return claim.wait(max(deadlines))
        finally:
            self.queues.moved(claim.moved_at)  # a busy lock is not taken for a stalled one

    def _serve_rest(
        self,
        claim: Claim,
        requests: list[Request],
        needs: list[frozenset[str]],
        deadlines: list[float],
        rest: list[int],
        results: Results,
        handle: BatchHandle[Request, Answer],
    ) -> None:
        """The rest of a split batch: wait for its names, serving each request once its names
        are held and timing each out at its own deadline; each answered at once.

        One that holds some of its names while it waits for another (a stalled holder's) keeps
        them from their other buyers: given up after `partial_hold` (LockTimeout, nothing written,
        names released). One holding none waits on, looking every patience (lest it hold one)."""
        partial_until = time.monotonic() + self.partial_hold
        while rest:
            claim.release(frozenset(claim.names) - frozenset().union(*(needs[i] for i in rest)))
            holding = [i for i in rest if needs[i] & claim.held]
            now = time.monotonic()
            look = max(partial_until, now) if holding else now + self.patience
            until = min(min(deadlines[i] for i in rest), look)
            try:
                held = claim.wait(until)
                self.queues.moved(claim.moved_at)
                ready = [i for i in rest if needs[i] <= held]
                if ready:
                    self._serve(claim, requests, needs, ready, results, time.perf_counter())
            except BaseException as exc:  # this part's failure, not the served part's
                for i in rest:
                    results[i] = exc
                ready = rest
            now = time.monotonic()
            gone = [i for i in holding if partial_until <= now]  # held a part too long
            expired = [i for i in rest if i not in ready and (deadlines[i] <= now or i in gone)]
            for i in expired:
                missing = sorted(needs[i] - claim.held)
                # The one it waited on (taken in order), unless it moved meanwhile
                self.queues.mark_stalled(missing[:1], requests[i])
                results[i] = LockTimeout(f"lock {missing[0]!r} not acquired in time")
            self._answer_now(requests, ready + expired, results, handle)
            rest = [i for i in rest if i not in ready and i not in expired]

    def _answer_now(
        self,
        requests: list[Request],
        chosen: list[int],
        results: Results,
        handle: BatchHandle[Request, Answer],
    ) -> None:
        decided = [requests[i].flag for i in chosen if isinstance(results[i], tuple)]
        self.forget_flags(decided)
        for i in chosen:
            result = results[i]
            assert result is not None
            handle.answer(i, result)

    def _decide_each_its_own(
        self, batch: list[Request], lease: Lease
    ) -> list[Decision | Exception]:
        """The batch decided in one commit. A failure that is no dependency's nor the lock's
        (a row a database refuses for one member's value) would fail every member with it:
        then each is decided alone, in order, under the same lease, so the failing member
        gets its own error and every other member the answer it would have had without it
        (a member that fails changed no level: its commit was rolled back)."""
        try:
            return list(self._decide(batch, lease))
        except (DependencyUnavailable, LockLost):
            raise
        except Exception:
            if len(batch) == 1:
                raise
            log.exception("a hold of %d failed; deciding each of its requests alone", len(batch))
        decided: list[Decision | Exception] = []
        for request in batch:
            try:
                [decision] = self._decide([request], lease)
                decided.append(decision)
            except (DependencyUnavailable, LockLost):
                raise
            except Exception as exc:
                log.exception("request %s failed alone", request.flag)
                decided.append(exc)
        return decided

    def _decide(self, batch: list[Request], lease: Lease) -> list[Decision]:
        return decide_batch(
            self.store, batch, lease, self.fencing, self.faults, self.events, self.max_level
        )

    def names_of(self, request: Request) -> frozenset[str]:
        return frozenset(lock_names(request.lines, self.lock_scope))

    def _serve(
        self,
        claim: Claim,
        requests: Sequence[Request],
        needs: list[frozenset[str]],
        chosen: list[int],
        results: Results,
        started: float,
    ) -> None:
        """The read-check-write of the chosen requests, under the names the claim holds."""
        names = frozenset().union(*(needs[i] for i in chosen))
        lease = claim.lease(names)
        for i in chosen:
            self.queues.leave(requests[i], held=True)
        locked = time.perf_counter()
        decisions = self._decide_each_its_own([requests[i] for i in chosen], lease)
        deducted = time.perf_counter()
        LOCK_WAIT.labels(self.locks.name).observe(locked - started)
        LOCK_HOLD.labels(self.locks.name).observe(deducted - locked)
        self.queues.held_for(deducted - locked)  # what a stall is measured against
        BATCH_SIZE.observe(len(chosen))
        hold = Hold(
            size=len(chosen),
            tokens=dict(lease.tokens),
            nodes=dict(lease.details),
            started=started,
            stages_ms={"lock": (locked - started) * 1000, "deduct": (deducted - locked) * 1000},
        )
        for i, decision in zip(chosen, decisions, strict=True):
            results[i] = decision if isinstance(decision, Exception) else (decision, hold)
        outcomes = Counter(
            type(d).__name__ if isinstance(d, Exception) else d.outcome.value for d in decisions
        )
        log.info(
            "hold of %s (tokens %s): batch of %d, %s; flags %s",
            sorted(names),
            sorted(set(hold.tokens.values()), key=str),
            hold.size,
            dict(outcomes),
            " ".join(requests[i].flag for i in chosen),
        )
