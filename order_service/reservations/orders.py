"""genOrder with a `reservationId`: the reservation turned into its order, with no second
deduction.

The order's id IS the reservation's id, so the order's flag is the flag its units were
deducted under: every later step of the order (a cancel's PUT /returnStock/{orderId}, a pay's
PUT /holds/{orderId}/release, the reconciler's GET /flags/{orderId}) names the deduction the
reservation made, with nothing to map and no path that could name another flag. And two
consumes of one reservation cannot both make an order: their order rows would share a primary
key.

One transaction of the order database does it all: the reservation's compare-and-set from
`held` to `consumed` (only while its expires_at has not passed, by the database's clock read
in this transaction: the expiry's compare-and-set has the opposite condition on the same
clock, so of a genOrder and the expiry pass exactly one moves it, whichever hosts run them; a
release, from `held` and before expires_at too, races it the same way), the order inserted
CONFIRMED (or, with payWithinSeconds, AWAITING_PAYMENT, its clock starting now), its
lines with the reservation's locations, its allocations, and, for a CONFIRMED order, the note
that its units are no longer held (hold_release, sent at once and by the reconciler if that
call gets no answer). Nothing moved: no order, and the buyer is told why (409).

The order's lines must be the reservation's (goods ids, units, locations; all or nothing):
anything else is refused with 422 and changes nothing, the reservation still held. A
reservation made for a user is that user's.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sqlalchemy.exc import IntegrityError

from order_service.core.buyer_limits import LimitExceeded, Wanted
from order_service.core.fills import Filled, allocations_from
from order_service.core.model import OrderRequest, OrderState, Placement
from order_service.core.statuses import AWAITING_PAYMENT
from order_service.placing import Cancellation, OrderFlow
from order_service.reservations.holds import UnknownReservation
from order_service.reservations.store import (
    CONSUMED,
    HELD,
    Reservation,
    ReservationStore,
    compare_and_set,
    read,
)
from order_service.storage.buyer_limits import retried
from order_service.storage.fill_store import Confirmed, record
from order_service.storage.store import OrderStore
from shared.logs import log_context
from shared.metrics import ORDERS, RESERVATIONS

log = logging.getLogger(__name__)
RESERVED = "reserved"  # the reason code of an order made of a reservation


class ReservationRefused(Exception):
    """The reservation is not held (or its time ran out): no order. `code`: pending, failed,
    consumed, released or expired."""

    def __init__(self, reservation: Reservation, code: str) -> None:
        super().__init__(f"the reservation is {code}: it cannot be turned into an order")
        self.reservation = reservation
        self.code = code


class ReservationMismatch(ValueError):
    """The order's request is not the reservation's (its lines, or its user)."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass
class ReservationOrders:
    orders: OrderStore
    reservations: ReservationStore
    flow: OrderFlow
    cancellation: Cancellation

    def place(self, request: OrderRequest, idempotency_key: str | None) -> Placement:
        rid = request.reservation_id
        assert rid is not None
        log_context(order_id=rid, flag=rid)
        if idempotency_key:  # a repeat: the order its key placed, as genOrder answers it
            existing = self.orders.by_idempotency_key(idempotency_key)
            if existing is not None:
                return self.flow.replay(existing, request)
        found = self.reservations.get(rid)
        if found is None:
            raise UnknownReservation(rid)
        try:
            if found.state != HELD:
                raise ReservationRefused(found, found.state)
            same_lines(found, request)
            state, filled = self.consume(found, request, idempotency_key)
        except (IntegrityError, ReservationRefused):
            # Its key was taken meanwhile (nothing of this one written), or the reservation
            # was consumed since the key was looked up: by this key's own first attempt,
            # whose order this repeat answers, as genOrder answers a repeat (found by the
            # model: a repeat racing its first attempt was refused).
            existing = self.orders.by_idempotency_key(idempotency_key or "")
            if existing is None:
                raise
            return self.flow.replay(existing, request)
        ORDERS.labels(state.status, RESERVED).inc()
        RESERVATIONS.labels(CONSUMED).inc()
        log.info("reservation %s consumed: order %s", rid, state.status)
        if state.status != AWAITING_PAYMENT:  # sold: its units are no longer held
            self.cancellation.release_hold(rid)
        fields = request.fill.answer_fields(request.lines, state.status, filled)
        return Placement(state, fields={**fields, "reservationId": rid})

    def consume(
        self, found: Reservation, request: OrderRequest, key: str | None
    ) -> tuple[OrderState, Filled]:
        """The compare-and-set and the order, in one transaction (the module's docstring);
        run again if the buyer's row for a rule was not written yet (storage/buyer_limits.py)."""
        return retried(self.orders, lambda: self._consume(found, request, key))

    def _consume(
        self, found: Reservation, request: OrderRequest, key: str | None
    ) -> tuple[OrderState, Filled]:
        rid = found.id
        status = request.confirmed
        reason = f"{RESERVED}: the units its reservation held"
        filled = Filled(
            dict(found.lines), allocations_from({"allocations": list(found.allocations)})
        )
        with self.reservations.writing() as write:
            rules = self.reservations.rules
            if rules is not None:  # perBuyer: the order counts; its units were held already
                wanted = Wanted(rid, request.user_id, dict(found.lines))
                refused = rules.check(write.conn, [wanted])
                if refused:
                    raise LimitExceeded(refused[rid])
            at = write.clock()  # before expires_at by the database's clock, whichever host
            moved = compare_and_set(
                write.conn, rid, (HELD,), CONSUMED, f"consumed: order {rid}", at, False
            )
            if not moved:
                now = read(write.conn, rid, lines=False, locked=True) or found
                code = "expired" if now.state == HELD else now.state  # held, but past its time
                raise ReservationRefused(now, code)
            order = {
                "id": rid,
                "user_id": request.user_id,
                "status": status,
                "reason": reason,
                "idempotency_key": key,
                "request_hash": request.fingerprint,
                "pay_within": request.pay_within,
                "pay_deadline": write.deadline(request.pay_within),
                "paid_at": None,
                "fill_mode": None,  # all or nothing, as its reservation was
            }
            write.add(order, dict(found.lines), request.fill)
            record(write.conn, [Confirmed(rid, filled, lines=not request.fill.plain)])
            if status != AWAITING_PAYMENT:
                write.add_hold_release(rid)
            deadline = write.deadline(request.pay_within)
        return OrderState(rid, status, reason, deadline), filled


def same_lines(found: Reservation, request: OrderRequest) -> None:
    """ReservationMismatch (nothing written) unless the order asks exactly what was reserved."""
    if request.fill.asked:  # partial, backorder, or any mode but all or nothing
        raise ReservationMismatch(
            f"fill: a reservation is all or nothing; its order cannot be {request.fill.mode}",
            "fill",
        )
    if dict(request.lines) != dict(found.lines):
        raise ReservationMismatch(
            "items: an order of a reservation takes exactly its goods ids and units "
            f"({dict(sorted(found.lines.items()))})",
            "items",
        )
    if dict(request.fill.locations) != dict(found.locations):
        raise ReservationMismatch(
            "items: the lines must name the locations their reservation named", "items"
        )
    if found.user_id is not None and found.user_id != request.user_id:
        raise ReservationMismatch("userId: the reservation was made for another user", "userId")
