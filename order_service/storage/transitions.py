"""The order's writes, each one unit of work (one transaction of the order database): the
service layer's side of the repository (storage/store.py), as decide.py is on the stock side.

Each protocol step of an order commits before the next remote call (the order row before its
flag and the stock call; the outcome after the answer), so a unit of work here is one step,
and its rules are here rather than in the repository:
- a status moves only by a compare-and-set from the statuses it may leave, and the answer is
  built from the row as the write left it (a reconciler or a cancel may have moved it first);
- pay and expiry are the same compare-and-set with opposite deadline conditions, each judged
  by the database's clock read in its own transaction (OrderWrite.clock: the hosts' clocks
  differ, the database's is one for all): exactly one of them wins, whichever host runs it;
- a write of the elected reconciler first moves the reconciler fence up to its (epoch, leader
  token), in the same transaction; a newer leader's pair there means this one was deposed:
  Superseded, nothing written;
- a hold's clock starts when its deduction is confirmed: the move to AWAITING_PAYMENT sets its
  deadline from the database's clock, so the buyer always gets the seconds they asked for,
  on the clock their pay is judged by.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from order_service.core.buyer_limits import LimitRefusal, Wanted
from order_service.core.fills import ALL, Fill
from order_service.core.model import OrderState
from order_service.core.statuses import (
    AWAITING_PAYMENT,
    CANCELLED,
    CANCELLED_BEFORE_PLACED,
    CONFIRMED,
    FAILED,
    PENDING,
    deducted_status,
)
from order_service.storage.buyer_limits import BuyerRules, retried
from order_service.storage.fill_store import Confirmed, record
from order_service.storage.store import OrderStore, OrderWrite


class Superseded(Exception):
    """A reconciler leader's write was refused: a newer leader has written."""


@dataclass(frozen=True, order=True)
class Fence:
    """An elected reconciler's fencing pair: the operator's epoch (RECONCILER_EPOCH), then the
    lock service's leader token. Compared in that order."""

    epoch: int
    token: int


@dataclass(frozen=True)
class NewOrder:
    """An order about to be written PENDING: its id (also its flag), its buyer and lines, its
    Idempotency-Key and the request's fingerprint, and a hold's seconds to pay in."""

    order_id: str
    user_id: str
    lines: dict[str, int]
    idempotency_key: str | None = None
    request_hash: str | None = None
    pay_within: int | None = None
    fill: Fill = ALL  # partial, and the lines' locations (order_service/core/fills.py)

    def row(self) -> dict[str, Any]:
        return {
            "id": self.order_id,
            "user_id": self.user_id,
            "status": PENDING,
            "reason": None,
            "idempotency_key": self.idempotency_key,
            "request_hash": self.request_hash,
            "pay_within": self.pay_within,
            "pay_deadline": None,
            "paid_at": None,
            "fill_mode": self.fill.asked,  # partial or backorder; null: all or nothing
        }

    @property
    def confirmed(self) -> str:
        """Its status once its stock is deducted."""
        return deducted_status(self.pay_within)


def create_pending(
    store: OrderStore,
    order_id: str,
    user_id: str,
    lines: dict[str, int],
    idempotency_key: str | None,
    request_hash: str | None,
    pay_within: int | None = None,
) -> None:
    """The order and its details, PENDING; with `pay_within`, a hold whose seconds to pay in
    start once its deduction is confirmed. A repeated idempotency key raises IntegrityError,
    nothing written."""
    create_pending_many(
        store,
        [NewOrder(order_id, user_id, lines, idempotency_key, request_hash, pay_within)],
    )


def create_pending_many(
    store: OrderStore, new: list[NewOrder], rules: BuyerRules | None = None
) -> dict[str, LimitRefusal]:
    """A batch's orders, PENDING, in one transaction: all of them, or (a repeated idempotency
    key: IntegrityError) none. With `rules`, the flash-sale rules per buyer are checked first
    in the same transaction, under the buyers' rows' locks (storage/buyer_limits.py): an order
    they refuse is written FAILED with the refusal as its reason (final: no flag, no stock
    call), the others PENDING. The refusals, by order id."""
    wanted = [Wanted(o.order_id, o.user_id, o.lines, holds=o.pay_within is not None) for o in new]

    def create() -> dict[str, LimitRefusal]:
        with store.writing() as write:
            refused = rules.check(write.conn, wanted) if rules is not None else {}
            rows = []
            for order in new:
                row = order.row()
                if order.order_id in refused:
                    row.update(status=FAILED, reason=refused[order.order_id].text())
                rows.append((row, order.lines, order.fill))
            write.add_many(rows)
        return refused

    return retried(store, create) if rules is not None else create()


def tombstone(store: OrderStore, order_id: str, idempotency_key: str) -> OrderState:
    """A cancel by key before any order under it: a CANCELLED row that holds the key, so the
    genOrder that comes later finds it (its insert fails on the unique key: IntegrityError
    here when the genOrder came first)."""
    with store.writing() as write:
        write.add(
            {
                "id": order_id,
                "user_id": "",
                "status": CANCELLED,
                "reason": CANCELLED_BEFORE_PLACED,
                "idempotency_key": idempotency_key,
                "request_hash": None,
                "pay_within": None,
                "pay_deadline": None,
                "paid_at": None,
            },
            {},
        )
    return OrderState(order_id, CANCELLED, CANCELLED_BEFORE_PLACED)


@dataclass(frozen=True)
class Finish:
    """One order to its outcome, alone (`finish`) or with its batch (`finish_many`)."""

    order_id: str
    status: str
    reason: str | None = None
    shortfalls: tuple[dict[str, Any], ...] = ()
    hold_for: int | None = None
    confirmed: Confirmed | None = None  # what a confirmed order filled, recorded with it


def finish(store: OrderStore, f: Finish) -> OrderState:
    """A PENDING order to its outcome (or why it is still PENDING), with the shortfall of each
    line the stock service refused; `hold_for`: AWAITING_PAYMENT's seconds to pay in, from
    now; `confirmed`: what a confirmed order filled, recorded with the move. The order's
    state after: the one written, or, when it was no longer PENDING (the reconciler settled
    it, the buyer cancelled it), the one found."""
    order_id, status = f.order_id, f.status
    reason = f.reason and f.reason[:200]
    hold_for = f.hold_for if status == AWAITING_PAYMENT else None
    with store.writing() as write:
        if not write.finish_pending(order_id, status, reason, hold_for):
            return write.state(order_id)
        deadline = write.deadline(hold_for)  # the one the move wrote (read once: cached)
        if f.confirmed is not None:
            record(write.conn, [f.confirmed])
        for short in f.shortfalls:
            write.record_shortfall(
                order_id, short.get("goodsId"), short.get("available"), short.get("seedVersion")
            )
    return OrderState(order_id, status, reason, deadline)


def finish_many(store: OrderStore, finishes: list[Finish]) -> dict[str, OrderState]:
    """A batch's orders to their outcomes in one transaction: one compare-and-set from
    PENDING per (status, reason, deadline) shared by several, the shortfalls of the refused
    lines in one statement. Each order's state after, as `finish` gives it: the one written,
    or the one found when the order had moved on (a cancel, the reconciler)."""
    groups: dict[tuple[str, str | None, int | None], list[Finish]] = {}
    for f in finishes:
        hold_for = f.hold_for if f.status == AWAITING_PAYMENT else None
        groups.setdefault((f.status, f.reason and f.reason[:200], hold_for), []).append(f)
    written: dict[str, OrderState] = {}
    with store.writing() as write:
        for (status, reason, hold_for), group in groups.items():
            ids = [f.order_id for f in group]
            moved = write.finish_group(ids, status, reason, hold_for)
            deadline = write.deadline(hold_for)
            states = {i: OrderState(i, status, reason, deadline) for i in ids}
            if moved != len(ids):  # some moved on before: what they became, and which are ours
                states = write.states(ids)
            written.update(states)
        write.record_shortfalls(
            [
                (f.order_id, s.get("goodsId"), s.get("available"), s.get("seedVersion"))
                for f in finishes
                for s in f.shortfalls
                if written[f.order_id].status == f.status == FAILED
                and written[f.order_id].reason == (f.reason and f.reason[:200])
            ]
        )
        record(
            write.conn,
            [
                f.confirmed
                for f in finishes
                if f.confirmed is not None
                and written[f.order_id].status == f.status
                and written[f.order_id].reason == (f.reason and f.reason[:200])
            ],
        )
    return written


def move(
    store: OrderStore,
    order_id: str,
    was: Sequence[str],
    status: str,
    reason: str | None,
    fence: Fence | None = None,
    due: bool | None = None,
    hold_for: int | None = None,
    confirmed: Confirmed | None = None,
    **values: Any,
) -> tuple[bool, OrderState]:
    """Every other transition: one of `was` -> `status` (`due`, `hold_for`: see
    OrderWrite.compare_and_set), with `fence` the elected reconciler's (see the module's
    docstring), and `confirmed` recorded if it moved. Whether it moved, and the order's state
    after."""
    reason = reason and reason[:200]
    with store.writing() as write:
        fenced(write, fence)
        moved = write.compare_and_set(order_id, was, status, reason, due, hold_for, **values)
        if moved and confirmed is not None:
            record(write.conn, [confirmed])
        return moved, write.state(order_id)


def fenced(write: OrderWrite, fence: Fence | None) -> None:
    """The elected reconciler's write: the fence moved up to its pair first, in the write's
    own transaction; Superseded (nothing written) when a newer leader has written."""
    if fence is not None and not write.advance_fence(fence.epoch, fence.token):
        epoch, token = write.fence() or (0, 0)
        raise Superseded(
            f"write refused: a newer reconciler leader (epoch {epoch}, token {token}) has "
            f"written since this one (epoch {fence.epoch}, token {fence.token}) was "
            "elected; if the lock service was rebuilt, raise RECONCILER_EPOCH"
        )


def settle(
    store: OrderStore,
    order_id: str,
    was: str,
    status: str,
    reason: str,
    fence: Fence | None = None,
    hold_for: int | None = None,
    confirmed: Confirmed | None = None,
) -> bool:
    """Reconciliation: an order from `was` to `status` (with what it filled, when confirmed);
    False if it had moved on."""
    moved = move(
        store, order_id, (was,), status, reason, fence, hold_for=hold_for, confirmed=confirmed
    )
    return moved[0]


def pay(store: OrderStore, order_id: str) -> tuple[bool, OrderState]:
    """A hold paid before its deadline becomes CONFIRMED; the expiry's move is the same
    compare-and-set with the opposite deadline condition, both by the database's clock
    (whichever host each runs on): exactly one of them wins, and a pay answered paid is
    never contradicted by an expiry, nor an expiry by a pay."""
    with store.writing() as write:
        paid = write.compare_and_set(
            order_id, (AWAITING_PAYMENT,), CONFIRMED, "paid", due=False, paid_at=write.clock()
        )
        if paid:  # its units are no longer held: the stock service is told (hold_release)
            write.add_hold_release(order_id)
        return paid, write.state(order_id)


def hold_released(store: OrderStore, order_id: str) -> None:
    """The stock service has released a paid hold's units: nothing left to tell it."""
    with store.writing() as write:
        write.remove_hold_release(order_id)


def remove(store: OrderStore, order_id: str) -> bool:
    """Undo an order the stock service rejected as invalid: nothing of it is kept, unless it
    moved on meanwhile (a cancel took it: the cancel's answer named it). Whether removed."""
    with store.writing() as write:
        return write.remove_pending(order_id)
