"""What both a request and the elected reconciler do to a reservation
(order_service/reservations/holds.py, order_service/settling/reservations.py): learn its flag's
decision from the stock database, settle a pending one from it, expire a held one once its
expiresAt has passed by the database's clock, and give a released or expired one's units back.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from order_service.core.statuses import INSUFFICIENT_STOCK, VOIDED
from order_service.placing import StockClient, StockDecision
from order_service.reservations.store import (
    EXPIRED,
    EXPIRED_UNUSED,
    FAILED,
    HELD,
    PENDING,
    Reservation,
    ReservationStore,
)
from order_service.storage.transitions import Fence
from shared.contract import Decided, Outcome

log = logging.getLogger(__name__)
STOCK_SERVICE = "stock service"


class UnknownReservation(LookupError):
    pass


@dataclass(frozen=True)
class Reserved:
    """What a reserve or a release came to: the reservation as the write left it, and what to
    tell about it beyond its state."""

    reservation: Reservation
    unavailable: str | None = None  # the dependency whose failure decided or left it
    shortfalls: list[Any] = field(default_factory=list)
    refused: str | None = None  # a release that did nothing: consumed, expired, failed
    replayed: bool = False  # a repeat of an Idempotency-Key: nothing new made


def learn(stock: StockClient, flag: str) -> StockDecision | None:
    """The stock database's decision for a reservation's flag, made if there is none: asked
    (GET /flags), and, undecided, voided (PUT /voidFlag: deducted after all, or voided for
    good); a deduction is read again for its allocations. None: no answer."""
    decision = stock.decision(flag)
    if decision is None or decision.outcome is not None:
        return decision
    voided = stock.void(flag)
    if voided is None or voided.outcome != Decided.DEDUCTED:
        return voided
    again = stock.decision(flag)
    return again if again is not None and again.outcome == Decided.DEDUCTED else voided


class Settlement:
    """What both a request and the elected reconciler do to a reservation: settle a pending
    one from its flag's decision, expire a held one past its expiresAt, give a released or
    expired one's units back."""

    def __init__(self, store: ReservationStore, stock: StockClient) -> None:
        self.store = store
        self.stock = stock

    def get(self, reservation_id: str) -> Reservation:
        found = self.store.get(reservation_id)
        if found is None:
            raise UnknownReservation(reservation_id)
        return found

    def settle(
        self, rid: str, decision: StockDecision | None, ttl: int, fence: Fence | None = None
    ) -> Reserved:
        """A pending reservation from its flag's decision: deducted -> held (its clock starts
        now), refused or voided -> failed; undecided or unknown, it stays pending. The
        reservation after (a release may have moved it first: then as that left it)."""
        outcome = decision.outcome if decision is not None else None
        if outcome == Decided.DEDUCTED:
            assert decision is not None
            allocations = _allocations(decision.body)
            moved, after = self.store.move(
                rid, (PENDING,), HELD, None, fence, hold_for=ttl, allocations=allocations
            )
            if moved:
                log.info("reservation %s held for %d s", rid, ttl)
        elif outcome == Decided.REFUSED:
            after = self._fail(rid, INSUFFICIENT_STOCK, fence)
        elif outcome == Decided.VOIDED:
            after = self._fail(rid, f"{VOIDED}: its outcome was unknown", fence)
        else:  # undecided, no answer, or returned (a release took it and gave the units back)
            after = self.store.get(rid)
        if after is None:
            raise UnknownReservation(rid)
        return Reserved(after)

    def give_back(self, found: Reservation, fence: Fence | None = None) -> Reserved:
        """A released or expired reservation's units back; no answer: still owed (the
        elected reconciler asks again)."""
        decision = self.stock.return_stock(found.id)
        if decision is None:
            log.warning(
                "reservation %s %s: the stock service did not answer", found.id, found.state
            )
            return Reserved(found, unavailable=STOCK_SERVICE)
        returned = decision.outcome == Outcome.RETURNED
        self.store.returned(
            found.id, "stock returned" if returned else "nothing was deducted", fence
        )
        log.info("reservation %s %s: units back", found.id, found.state)
        return Reserved(self.store.get(found.id) or found)

    def expire_if_due(self, found: Reservation, fence: Fence | None = None) -> Reserved:
        """A held reservation as it is now: past its expiresAt by the database's clock it
        can only expire (a consume or a release is refused), so it is expired by the
        compare-and-set from `held` the pass uses, and its units given back. Not due (or
        moved on meanwhile: consumed, released): as it is, nothing done."""
        moved, after = self.store.move(found.id, (HELD,), EXPIRED, EXPIRED_UNUSED, fence, due=True)
        if after is None:
            raise UnknownReservation(found.id)
        if not moved:
            return Reserved(after)
        log.info("reservation %s expired", found.id)
        return self.give_back(after, fence)

    def _fail(self, rid: str, reason: str, fence: Fence | None = None) -> Reservation:
        _, after = self.store.move(rid, (PENDING,), FAILED, reason, fence)
        if after is None:
            raise UnknownReservation(rid)
        return after


def _allocations(body: Any) -> list[dict[str, Any]]:
    found = body.get("allocations") if isinstance(body, dict) else None
    return [a for a in found if isinstance(a, dict)] if isinstance(found, list) else []
