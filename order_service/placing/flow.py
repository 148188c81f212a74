"""POST /genOrder, the article's steps:

    create the order (PENDING) -> write the flag to Redis -> call the stock service
    (retries carry the same flag) -> confirm through the stock flow, polling with backoff

The first three and the finish run for a batch of orders at a time (placing/batching.py: one
transaction, one pipeline, one stock call); this module is one order's way through them, and
the slow path each takes in its own request's thread: polling the flow and voiding.

What each answer of the stock service makes of the order:
- deducted: the answer carries the stock-flow rows its commit wrote (the rows GET /stockFlow
  returns): confirmed from them, CONFIRMED, with no read back (the answer is sent only after
  the commit: reading the rows again would tell nothing more, at an HTTP request's cost).
- not attempted (its lock not had within its batch's budget): sent again alone, in its own
  request's thread, so it never holds its batch's other orders up.
- duplicate (deducted by another attempt), or deducted without its rows: the polls read the
  flow, the article's way, and the order is CONFIRMED.
- backordered (fill=backorder): BACKORDERED with each line's units taken (core/fills.py);
  owed units are in no flow, so its slow path polls the decision (GET /flags), not the flow.
- insufficient, voided: the stock database's decision, recorded before the answer, that
  nothing was and nothing ever will be deducted (a late attempt finds it): FAILED at once, and
  a 409 for lack of stock holds whatever comes back to the shelf afterwards.
- unknown_flag: the flag is live neither in Redis nor in the stock database (Redis lost it):
  written again and the call made again.
- unknown goods, the order's own result (the single route's 404 naming its goods ids, or its
  `unknown_goods` in a batch), with no unanswered attempt before it: the order is removed and
  the buyer told 422. A 4xx about the whole call (413, a batch's 400/422) is no such result
  (order_service/placing/batch_call.py), nor is one after an attempt that may have deducted: both
  leave the outcome unknown, as below.
- no answer (timeouts, 5xx after the retries), or a flow that cannot be read: the outcome is
  unknown, and the stock database is asked what it decided (GET /flags): deducted means
  CONFIRMED, refused or voided FAILED. Undecided, or no answer: the order stays PENDING with
  its reason, and the elected reconciler deducts again under the same flag once the
  dependency is back (and voids it only after RECONCILE_VOID_AFTER).
- refused by a flash-sale rule per buyer (limit_per_buyer, limit_held: docs/buyer-limits.md),
  in the transaction that created it: FAILED there, before any flag or stock call.
So an order is FAILED only on the stock database's decision (or a rule's, before any call),
never a guess, and no answer is contradicted by the order's final state: it is made from the
row as the write left it.

This module speaks of orders, not HTTP: the routes (api/routes.py) turn a Placement into a status.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import redis

from coordination.locks import LockTimeout
from order_service.core.fills import Settled
from order_service.core.model import (
    IdempotencyKeyReused,
    OrderRemoved,
    OrderRequest,
    OrderRow,
    Placement,
    StockRejected,
)
from order_service.core.statuses import (
    BACKORDERED,
    CONFIRMED,
    FAILED,
    OUTCOME_UNKNOWN,
    PENDING,
    REJECTED,
)
from order_service.placing.answers import UNKNOWN
from order_service.placing.batch_results import KeyTaken, Placed, Rejected, Unclear
from order_service.placing.batching import OrderBatches
from order_service.placing.client import StockAnswer, StockClient, StockDecision
from order_service.storage import transitions
from order_service.storage.fill_store import Confirmed
from order_service.storage.store import OrderStore
from order_service.storage.transitions import Finish, NewOrder
from shared.contract import Decided, Outcome
from shared.ids import new_id
from shared.logs import log_context
from shared.metrics import CONFIRMATION_POLLS, ORDERS

log = logging.getLogger(__name__)
STOCK_SERVICE = "stock service"


class OrdersBusy(LockTimeout):
    """The order waited in its process's queue past its patience: nothing was written."""

    dependency = "order service"


class OrderFlow:
    def __init__(
        self,
        store: OrderStore,
        redis_client: redis.Redis,
        stock: StockClient,
        batches: OrderBatches,
        confirm_backoff: tuple[float, ...],
        idempotency_wait: float,
        queue_patience: float,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.store = store
        self.redis = redis_client
        self.stock = stock
        self.batches = batches
        self.confirm_backoff = confirm_backoff
        self.idempotency_wait = idempotency_wait
        self.queue_patience = queue_patience
        self.sleep = sleep

    def place(self, request: OrderRequest, idempotency_key: str | None) -> Placement:
        fingerprint = request.fingerprint if idempotency_key else None
        if idempotency_key:
            existing = self.store.by_idempotency_key(idempotency_key)
            if existing is not None:
                return self.replay(existing, request)
        order_id = new_id()
        # The flag is the order id (the article's design): both name this order in the logs.
        log_context(order_id=order_id, flag=order_id)
        new = NewOrder(
            order_id,
            request.user_id,
            request.lines,
            idempotency_key,
            fingerprint,
            request.pay_within,
            request.fill,
        )
        try:
            result = self.batches.submit(new, self.queue_patience)
        except LockTimeout as exc:  # queued past its patience: nothing was written
            raise OrdersBusy(str(exc)) from exc
        if isinstance(result, Unclear) and result.answer.not_attempted:
            result = self.batches.place_alone(new)  # never held its batch up
        if isinstance(result, KeyTaken):
            # Two submits with one key raced, or the key was cancelled before: the unique key
            # let exactly one row through. Gone since: that order was rejected and removed.
            existing = self.store.by_idempotency_key(idempotency_key or "")
            if existing is None:
                raise OrderRemoved(None)
            return self.replay(existing, request)
        if isinstance(result, Placed):
            shortfalls = list(result.shortfalls)
            filled = result.confirmed.filled if result.confirmed else None
            fields = request.fill.answer_fields(request.lines, result.order.status, filled)
            return Placement(
                result.order, False, result.unavailable, shortfalls, result.batch, fields
            )
        if isinstance(result, Rejected):
            raise self.undo_rejected(order_id, result.answer)
        placement = self.slow_path(order_id, request, result.answer)
        if request.fill.plain or placement.fields:
            return placement
        # An order that asked for a fill or a location, settled meanwhile: as its row says.
        row = self.store.get(order_id)
        return replace(placement, fields=row.answer_fields()) if row else placement

    def slow_path(self, order_id: str, request: OrderRequest, answer: StockAnswer) -> Placement:
        """The outcome the batch could not learn: its flows polled (the decision, for a fill
        that may owe units: those are in no flow)."""
        # Every attempt answered, none deducting (a call refused whole): no flow to wait for.
        may_commit = answer.outcome != UNKNOWN or answer.uncertain
        if request.fill.policy.owes:
            waits = self.confirm_backoff if may_commit else ()
            return self.settle_unknown(order_id, request, answer, waits)
        if may_commit:
            flows = self.poll_flows(order_id)
            if flows and request.fill.plain:
                return self.confirm(order_id, request)
            if flows:
                settled = self.filled_after_polls(order_id, request, flows)
                if settled is not None:
                    return self.confirm(order_id, request, settled)
        return self.settle_unknown(order_id, request, answer)

    def poll_flows(self, order_id: str) -> list[dict[str, Any]] | None:
        """Read the flows at once, then again after each delay of the schedule (the article's
        3 s, 5 s, 10 s). None when the stock service never answered."""
        CONFIRMATION_POLLS.inc()
        flows = self.stock.flows(order_id)
        for delay in self.confirm_backoff:
            if flows:
                break
            self.sleep(delay)
            CONFIRMATION_POLLS.inc()
            latest = self.stock.flows(order_id)
            flows = latest if latest is not None else flows
        return flows

    def filled_after_polls(
        self, order_id: str, request: OrderRequest, flows: list[dict[str, Any]]
    ) -> Settled | None:
        """What the polled flows of an order that asked for a fill or a location filled, and
        where from, as the stock database's decision (GET /flags) says; the flows alone when it
        does not answer. None: they are not a deduction of its lines (never guessed)."""
        decision = self.stock.decision(order_id)
        policy = request.fill.policy
        if decision is not None and decision.outcome == Decided.DEDUCTED:
            return policy.deducted(request.lines, decision.flows, decision.body)
        return policy.deducted(request.lines, flows)

    def decision_after_polls(self, order_id: str, waits: Sequence[float]) -> StockDecision | None:
        """The stock database's decision, asked at once and again after each wait while it has
        none (an attempt that had no answer may still commit); None: it never answered."""
        decision = self.stock.decision(order_id)
        for delay in waits:
            if decision is not None and decision.outcome is not None:
                break
            self.sleep(delay)
            decision = self.stock.decision(order_id) or decision
        return decision

    def settle_unknown(
        self,
        order_id: str,
        request: OrderRequest,
        answer: StockAnswer,
        waits: Sequence[float] = (),
    ) -> Placement:
        """No flow after the polls: ask the stock database what it decided, changing nothing.
        Decided, its decision is final, as the order's fill policy reads it. Undecided (the
        deduction could not run: no lock quorum, the stock service unreachable), or no answer:
        the order stays PENDING, and the elected reconciler deducts again under the same flag
        once the dependency is back, voiding it only after RECONCILE_VOID_AFTER: a fault healed
        within that bound loses no sale (before, the order was voided here, with the stock on
        the shelf). `waits`: asked again after each while undecided."""
        why = answer.error or f"the stock service answered {answer.outcome}"
        unavailable = "redis" if answer.outcome == Outcome.UNKNOWN_FLAG else STOCK_SERVICE
        decision = self.decision_after_polls(order_id, waits)
        if decision is None or decision.outcome is None:
            return self.finish(order_id, PENDING, OUTCOME_UNKNOWN, why, unavailable=unavailable)
        settled = request.fill.policy.decided(
            request.lines, decision.outcome, decision.flows, decision.body
        )
        if settled is not None and settled.status in (CONFIRMED, BACKORDERED):
            return self.confirm(order_id, request, settled)
        if settled is not None and settled.status == FAILED:
            return self.finish(order_id, FAILED, settled.code, why, unavailable=unavailable)
        # Flows that are not this order's lines: never guessed; left for a person.
        detail = f"flows {decision.deducted_lines()} differ from the order's lines"
        return self.finish(order_id, PENDING, OUTCOME_UNKNOWN, detail, unavailable=unavailable)

    def finish(
        self,
        order_id: str,
        status: str,
        code: str | None = None,
        detail: str | None = None,
        unavailable: str | None = None,
        shortfalls: list[Any] | None = None,
        hold_for: int | None = None,
        confirmed: Confirmed | None = None,
        fields: dict[str, Any] | None = None,
    ) -> Placement:
        reason = f"{code}: {detail}" if code and detail else code
        finish = Finish(order_id, status, reason, tuple(shortfalls or ()), hold_for, confirmed)
        state = transitions.finish(self.store, finish)
        if state.status != status:
            log.info("order %s was settled meanwhile: %s", order_id, state.status)
            return Placement(state)
        log.info("order %s %s%s", order_id, status, f" ({reason})" if reason else "")
        ORDERS.labels(status, code or "none").inc()
        return Placement(
            state, unavailable=unavailable, shortfalls=shortfalls or [], fields=fields or {}
        )

    def confirm(
        self, order_id: str, request: OrderRequest, settled: Settled | None = None
    ) -> Placement:
        """Deducted: CONFIRMED, or a hold AWAITING_PAYMENT whose clock starts now, or a
        backorder BACKORDERED, as `settled` says, with what it filled and where from recorded
        with it (none: a plain order, filled whole)."""
        if settled is None:
            return self.finish(order_id, request.confirmed, hold_for=request.pay_within)
        status = request.confirmed if settled.status == CONFIRMED else settled.status
        return self.finish(
            order_id,
            status,
            shortfalls=list(settled.shortfalls),
            hold_for=request.pay_within,
            confirmed=Confirmed(order_id, settled.filled, lines=not request.fill.plain),
            fields=request.fill.answer_fields(request.lines, status, settled.filled),
        )

    def undo_rejected(self, order_id: str, answer: StockAnswer) -> StockRejected:
        """The stock service refused the request itself (unknown goods): keep nothing of it,
        unless a cancel took the order meanwhile (then the row stays, as the cancel's answer
        named it). Nothing can be deducted for it: no attempt got past the goods check, and
        its flag is deleted."""
        if not transitions.remove(self.store, order_id):
            log.info("order %s was rejected (%s) after a cancel took it", order_id, REJECTED)
        try:
            self.redis.delete(order_id)
        except redis.RedisError:
            log.warning("could not delete flag %s of a rejected order", order_id)
        return StockRejected.of(answer.status, answer.body)

    def replay(self, existing: OrderRow, request: OrderRequest) -> Placement:
        """A repeat of an Idempotency-Key: nothing new created; the order's state now, once its
        first request has finished (so the buyer learns the truth: placed, refused, or
        cancelled since)."""
        log_context(order_id=existing.id, flag=existing.id)
        if existing.tombstone:  # cancelled by key before it was placed: nothing to place
            return Placement(existing.state, replayed=True)
        if existing.request_hash != request.fingerprint:
            raise IdempotencyKeyReused(existing.id)
        order: OrderRow | None = existing
        deadline = time.monotonic() + self.idempotency_wait
        while order is not None and order.status == PENDING and order.reason is None:
            if time.monotonic() >= deadline:
                break
            self.sleep(0.05)  # the first request is still running; its answer is coming
            order = self.store.get(existing.id)
        if order is None:  # rejected (unknown goods) and removed while this repeat waited
            raise OrderRemoved(existing.id)
        return Placement(order.state, replayed=True, fields=order.answer_fields())
