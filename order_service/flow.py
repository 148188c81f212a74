"""POST /genOrder, the article's steps, one function each:

    create the order (PENDING) -> write the flag to Redis -> call the stock service
    (retries carry the same flag) -> confirm through the stock flow, polling with backoff

An `insufficient` answer is a known outcome: the order fails at once. Any unknown outcome
(timeouts, `duplicate`, 5xx) is settled by the stock flow, which is the truth: flows found means
CONFIRMED, none after the schedule means FAILED. An order is never left PENDING without a reason.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import redis
from sqlalchemy.exc import IntegrityError

from order_service.stock_client import UNKNOWN, StockAnswer, StockClient
from order_service.store import (
    CONFIRMED,
    FAILED,
    INSUFFICIENT_STOCK,
    PENDING,
    OrderRow,
    OrderStore,
)
from shared.http_errors import ApiError
from shared.ids import new_id
from shared.logs import log_context
from shared.metrics import CONFIRMATION_POLLS, ORDERS

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OrderRequest:
    user_id: str
    lines: dict[str, int]

    def fingerprint(self) -> str:
        canonical = json.dumps({"userId": self.user_id, "lines": self.lines}, sort_keys=True)
        return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass
class OrderAnswer:
    status_code: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


def answer_for(order: OrderRow) -> OrderAnswer:
    if order.status == CONFIRMED:
        return OrderAnswer(200, {"orderId": order.id, "status": CONFIRMED, "result": "success"})
    if order.status == FAILED:
        return OrderAnswer(
            409, {"orderId": order.id, "status": FAILED, "result": "false", "reason": order.reason}
        )
    return OrderAnswer(
        202, {"orderId": order.id, "status": PENDING, "result": "pending", "reason": order.reason}
    )


class OrderFlow:
    def __init__(
        self,
        store: OrderStore,
        redis_client: redis.Redis,
        stock: StockClient,
        flag_ttl: int,
        confirm_backoff: tuple[float, ...],
        idempotency_wait: float,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.store = store
        self.redis = redis_client
        self.stock = stock
        self.flag_ttl = flag_ttl
        self.confirm_backoff = confirm_backoff
        self.idempotency_wait = idempotency_wait
        self.sleep = sleep

    def place(self, request: OrderRequest, idempotency_key: str | None) -> OrderAnswer:
        fingerprint = request.fingerprint() if idempotency_key else None
        if idempotency_key:
            existing = self.store.by_idempotency_key(idempotency_key)
            if existing is not None:
                return self.replay(existing, request)
        order_id = new_id()
        try:
            self.store.create_pending(
                order_id, request.user_id, request.lines, idempotency_key, fingerprint
            )
        except IntegrityError:
            # Two submits with one key raced; the unique key let exactly one insert through.
            existing = self.store.by_idempotency_key(idempotency_key or "")
            if existing is None:
                raise
            return self.replay(existing, request)
        # The flag is the order id (the article's design): both name this order in the logs.
        log_context(order_id=order_id, flag=order_id)
        log.info("order created for %s: %d goods ids", request.user_id, len(request.lines))
        self.write_flag(order_id)
        answer = self.stock.reduce_stock(order_id, request.lines)
        log.info("stock service answered %s after %d attempts", answer.outcome, answer.attempts)
        if answer.outcome == "rejected":
            return self.undo_rejected(order_id, answer)
        if answer.outcome == "insufficient":
            return self.finish(
                order_id, FAILED, INSUFFICIENT_STOCK, 409, shortfalls=_shortfalls(answer)
            )
        return self.confirm(order_id, answer)

    def write_flag(self, order_id: str) -> None:
        """The operation flag: lets the stock service tell a retry from a new operation."""
        try:
            self.redis.set(order_id, "orderId", ex=self.flag_ttl)
        except redis.RedisError as exc:
            log.warning("redis unavailable writing flag %s: %s", order_id, exc)
            self.store.finish(order_id, FAILED, "redis_unavailable")
            raise ApiError(
                503,
                "redis unavailable; the order was not placed",
                dependency="redis",
                orderId=order_id,
                status=FAILED,
            ) from exc

    def confirm(self, order_id: str, answer: StockAnswer) -> OrderAnswer:
        flows = self.poll_flows(order_id)
        if flows:
            return self.finish(order_id, CONFIRMED, None, 200)
        if answer.outcome == UNKNOWN and flows is None:
            # Neither the call nor the polls got an answer: the outcome really is unknown.
            reason = f"outcome_unknown: {answer.error}"
            self.store.finish(order_id, PENDING, reason[:200])
            raise ApiError(
                503,
                "stock service unavailable; the order's outcome is unknown",
                dependency="stock service",
                orderId=order_id,
                status=PENDING,
            )
        if answer.outcome == UNKNOWN:
            reason = f"stock_unavailable: {answer.error}"
            self.store.finish(order_id, FAILED, reason[:200])
            raise ApiError(
                503,
                "stock service unavailable; the order failed",
                dependency="stock service",
                orderId=order_id,
                status=FAILED,
                reason=reason[:200],
            )
        return self.finish(order_id, FAILED, "not_confirmed", 409)

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

    def finish(
        self, order_id: str, status: str, reason: str | None, code: int, **extra: Any
    ) -> OrderAnswer:
        self.store.finish(order_id, status, reason, extra.get("shortfalls"))
        log.info("order %s%s", status, f" ({reason})" if reason else "")
        # The reason's class only ("outcome_unknown: ReadTimeout ..." counts as outcome_unknown):
        # a label per error text would make a series per error text.
        ORDERS.labels(status, (reason or "").split(":")[0].split(" ")[0] or "none").inc()
        body: dict[str, Any] = {
            "orderId": order_id,
            "status": status,
            "result": "success" if status == CONFIRMED else "false",
        }
        if reason:
            body["reason"] = reason
        body.update(extra)
        return OrderAnswer(code, body)

    def undo_rejected(self, order_id: str, answer: StockAnswer) -> OrderAnswer:
        """The stock service refused the request itself (unknown goods): keep nothing of it."""
        self.store.remove(order_id)
        try:
            self.redis.delete(order_id)
        except redis.RedisError:
            log.warning("could not delete flag %s of a rejected order", order_id)
        message = answer.body.get("error") if isinstance(answer.body, dict) else None
        status = 422 if answer.status == 404 else 400
        raise ApiError(
            status,
            message or "rejected by the stock service",
            **(
                {"goodsIds": answer.body["goodsIds"]}
                if isinstance(answer.body, dict) and "goodsIds" in answer.body
                else {}
            ),
        )

    def replay(self, existing: OrderRow, request: OrderRequest) -> OrderAnswer:
        """A repeat of an Idempotency-Key: the first request's answer, nothing new created."""
        log_context(order_id=existing.id, flag=existing.id)
        if existing.request_hash != request.fingerprint():
            raise ApiError(
                422,
                "Idempotency-Key was already used with a different request",
                orderId=existing.id,
            )
        order: OrderRow | None = existing
        deadline = time.monotonic() + self.idempotency_wait
        while order is not None and order.status == PENDING and order.reason is None:
            if time.monotonic() >= deadline:
                break
            self.sleep(0.05)  # the first request is still running; its answer is coming
            order = self.store.get(existing.id)
        answer = answer_for(order or existing)
        answer.headers["Idempotent-Replayed"] = "true"
        return answer


def _shortfalls(answer: StockAnswer) -> list[Any]:
    if isinstance(answer.body, dict):
        return list(answer.body.get("shortfalls", []))
    return []
