"""The stock service's routes and their waits for a lock: every request's caller deadline read at
its arrival (X-Caller-Timeout-Ms, stock_service/deduction/caller_deadline.py), the 503 of a lock
whose queue in this process is full (stock_service/deduction/lock_queue.py: naming the goods id
and the lock, with Retry-After), and the queue's bound from the service's settings."""

from __future__ import annotations

import logging

from apiflask import APIBlueprint
from flask import Response, jsonify, request
from pydantic import Field

from shared.web.schemas import Unavailable
from stock_service.deduction import LockQueueFull, start_caller_deadline

log = logging.getLogger("stock_service")


class LockBusy(Unavailable):
    """A dependency down, the lock not had in time (LOCK_TIMEOUT, or the caller's
    X-Caller-Timeout-Ms), or the lock's queue full: nothing written, retryable."""

    goodsId: str | None = Field(
        None, description="the queue full (LOCK_QUEUE_MAX): the goods id whose lock it is"
    )
    lock: str | None = Field(None, description="the queue full: the lock's name")
    retryAfter: int | None = Field(
        None, description="the queue full: seconds to wait (the Retry-After header too)"
    )


DOWN = (
    LockBusy,
    "A dependency is down, or the lock was not had (within LOCK_TIMEOUT or the caller's "
    "X-Caller-Timeout-Ms), or LOCK_QUEUE_MAX requests of this process already wait for the "
    "lock of one of its goods ids (goodsId, lock, retryAfter and a Retry-After header): "
    "nothing written, retryable under the same flag",
)


def install_waits(bp: APIBlueprint) -> None:
    """On the app `bp` is registered with: each request's caller deadline, the answer of a
    full queue, and the bound of the queues (LOCK_QUEUE_MAX)."""

    @bp.before_app_request
    def _caller_deadline() -> None:
        start_caller_deadline(request.headers)

    @bp.app_errorhandler(LockQueueFull)
    def _queue_full(exc: LockQueueFull) -> tuple[Response, int, dict[str, str]]:
        log.warning("503: %s", exc.answer())
        body = {
            "error": exc.answer(),
            "dependency": exc.dependency,
            "goodsId": exc.goods_id,
            "lock": exc.lock,
            "retryAfter": exc.retry_after,
        }
        return jsonify(body), 503, {"Retry-After": str(exc.retry_after)}
