"""The order's writes, each one unit of work (one transaction of the order database): the
service layer's side of the repository (store.py), as decide.py is on the stock side.

Each protocol step of an order commits before the next remote call (the order row before its
flag and the stock call; the outcome after the answer), so a unit of work here is one step,
and its rules are here rather than in the repository:
- a status moves only by a compare-and-set from the statuses it may leave, and the answer is
  built from the row as the write left it (a reconciler or a cancel may have moved it first);
- pay and expiry are the same compare-and-set with opposite deadline conditions, read by the
  same transaction's clock: exactly one of them wins;
- a write of the elected reconciler first moves the reconciler fence up to its leader token,
  in the same transaction; a newer leader's token there means this one was deposed:
  Superseded, nothing written.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from order_service.model import AWAITING_PAYMENT, CONFIRMED, PENDING, OrderState
from order_service.store import OrderStore


class Superseded(Exception):
    """A reconciler leader's write was refused: a newer leader has written."""


def create_pending(
    store: OrderStore,
    order_id: str,
    user_id: str,
    lines: dict[str, int],
    idempotency_key: str | None,
    request_hash: str | None,
    pay_within: int | None = None,
) -> datetime | None:
    """The order and its details, PENDING; with `pay_within` seconds, a hold whose payment is
    due by then (returned). A repeated idempotency key raises IntegrityError, nothing written."""
    with store.writing() as write:
        deadline = write.stamp + timedelta(seconds=pay_within) if pay_within else None
        write.add(
            {
                "id": order_id,
                "user_id": user_id,
                "status": PENDING,
                "reason": None,
                "idempotency_key": idempotency_key,
                "request_hash": request_hash,
                "pay_deadline": deadline,
                "paid_at": None,
            },
            lines,
        )
    return deadline


def finish(
    store: OrderStore,
    order_id: str,
    status: str,
    reason: str | None,
    shortfalls: list[dict[str, Any]] | None = None,
    pay_deadline: datetime | None = None,
) -> OrderState:
    """A PENDING order to its outcome (or why it is still PENDING), with the shortfall of each
    line the stock service refused. The order's state after: the one written, or, when it was
    no longer PENDING (the reconciler settled it, the buyer cancelled it), the one found."""
    reason = reason and reason[:200]
    with store.writing() as write:
        if not write.finish_pending(order_id, status, reason):
            return write.state(order_id)
        for short in shortfalls or []:
            write.record_shortfall(
                order_id, short.get("goodsId"), short.get("available"), short.get("seedVersion")
            )
    return OrderState(order_id, status, reason, pay_deadline)


def move(
    store: OrderStore,
    order_id: str,
    was: Sequence[str],
    status: str,
    reason: str | None,
    fence: int | None = None,
    due: bool | None = None,
    **values: Any,
) -> tuple[bool, OrderState]:
    """Every other transition: one of `was` -> `status` (`due`: see OrderWrite.compare_and_set),
    with `fence` the elected reconciler's leader token (see the module's docstring). Whether it
    moved, and the order's state after."""
    reason = reason and reason[:200]
    with store.writing() as write:
        if fence is not None and not write.advance_fence(fence):
            raise Superseded(
                f"write refused: a newer reconciler leader (token {write.fence()}) has written "
                f"since this one (token {fence}) was elected"
            )
        moved = write.compare_and_set(order_id, was, status, reason, due, **values)
        return moved, write.state(order_id)


def settle(
    store: OrderStore, order_id: str, was: str, status: str, reason: str, fence: int | None = None
) -> bool:
    """Reconciliation: an order from `was` to `status`; False if it had moved on."""
    return move(store, order_id, (was,), status, reason, fence)[0]


def pay(store: OrderStore, order_id: str) -> tuple[bool, OrderState]:
    """A hold paid before its deadline becomes CONFIRMED; the expiry's move is the same
    compare-and-set with the opposite deadline condition: exactly one of them wins."""
    with store.writing() as write:
        paid = write.compare_and_set(
            order_id, (AWAITING_PAYMENT,), CONFIRMED, "paid", due=False, paid_at=write.stamp
        )
        return paid, write.state(order_id)


def remove(store: OrderStore, order_id: str) -> None:
    """Undo an order the stock service rejected as invalid: nothing of it is kept."""
    with store.writing() as write:
        write.remove(order_id)
