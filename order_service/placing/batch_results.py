"""What a batch's stock answers make of its orders (order_service/placing/batching.py): each order's
result, and for those whose outcome is known the finish its row is moved to; pure, no I/O.

- insufficient, voided, cancelled meanwhile: FAILED with its reason;
- deducted with its rows: CONFIRMED (or AWAITING_PAYMENT, a hold), with what it filled;
  backordered with its lines: BACKORDERED, what was on hand taken and the rest owed (each as
  the order's fill policy reads the answer: core/fills.py);
- rejected (the stock service knows none of some of its own goods ids): Rejected;
- anything else (no answer, a duplicate without rows, not attempted): Unclear, for its own
  request's thread (order_service/placing/flow.py) to learn or to send again alone."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from order_service.core.model import OrderState
from order_service.core.statuses import CONFIRMED, FAILED, INSUFFICIENT_STOCK, VOIDED
from order_service.placing.client import StockAnswer
from order_service.storage.fill_store import Confirmed
from order_service.storage.transitions import Finish, NewOrder
from shared.contract import Outcome


@dataclass(frozen=True)
class Placed:
    """Written to its outcome by the batch (or found moved on: a cancel, the reconciler)."""

    order: OrderState
    code: str | None = None  # the reason's code of a FAILED order, for the metrics
    unavailable: str | None = None  # the dependency whose failure decided the outcome
    shortfalls: tuple[dict[str, object], ...] = ()
    batch: int = 1  # the orders of its batch
    confirmed: Confirmed | None = None  # what it filled, and where from


@dataclass(frozen=True)
class Unclear:
    """PENDING, its outcome not learned: its own thread polls the flow, then voids."""

    answer: StockAnswer
    batch: int = 1


@dataclass(frozen=True)
class Rejected:
    """The stock service knows none of some of its own goods ids (never a whole call's 4xx)."""

    answer: StockAnswer


@dataclass(frozen=True)
class KeyTaken:
    """Its Idempotency-Key holds another order (a concurrent submit, or a cancel before it)."""


BatchResult = Placed | Unclear | Rejected | KeyTaken


def concluded(
    orders: list[NewOrder], answers: Mapping[str, StockAnswer]
) -> tuple[list[Finish], dict[str, BatchResult]]:
    """The finishes of the orders whose outcome the answers tell, and the results of the
    others."""
    finishes: list[Finish] = []
    results: dict[str, BatchResult] = {}
    for order in orders:
        answer = answers[order.order_id]
        if answer.outcome == Outcome.INSUFFICIENT:
            shortfalls = tuple(_shortfalls(answer))
            finishes.append(Finish(order.order_id, FAILED, INSUFFICIENT_STOCK, shortfalls))
        elif answer.outcome == Outcome.VOIDED:
            why = f"{VOIDED}: the flag was voided before this call"
            finishes.append(Finish(order.order_id, FAILED, why))
        elif answer.outcome == Outcome.CANCELLED:  # cancelled meanwhile; the row says so
            finishes.append(Finish(order.order_id, FAILED, f"{VOIDED}: cancelled meanwhile"))
        elif settled := order.fill.policy.answered(order.lines, answer.outcome, answer.body):
            # deducted with its rows, or backordered: what was on hand taken, the rest owed
            status = order.confirmed if settled.status == CONFIRMED else settled.status
            filled = Confirmed(order.order_id, settled.filled, lines=not order.fill.plain)
            finishes.append(
                Finish(
                    order.order_id,
                    status,
                    shortfalls=settled.shortfalls,
                    hold_for=order.pay_within,
                    confirmed=filled,
                )
            )
        elif answer.outcome == "rejected":
            results[order.order_id] = Rejected(answer)
        else:
            results[order.order_id] = Unclear(answer, len(orders))
    return finishes, results


def _shortfalls(answer: StockAnswer) -> list[dict[str, object]]:
    if isinstance(answer.body, dict):
        return list(answer.body.get("shortfalls") or [])
    return []
