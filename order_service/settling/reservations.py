"""The elected reconciler's work on reservations (settling/reconcile.py runs it in each
pass, before the paid holds' releases). Three kinds, each read in keyset pages, oldest first:

- pending, last moved more than `older_than` ago (one request's whole budget: no POST
  /reservations of it still runs): its request lost the stock service. Its flag's decision is
  asked, and made if there is none (order_service/reservations/holds.py, `learn`: voided, or
  deducted after all): held (its clock starting now) or failed.
- held past its expires_at: expired by a compare-and-set from `held` whose condition is that
  expires_at has passed by the writing transaction's clock (a genOrder's consume has the
  opposite condition, a release none but `held`: exactly one of the three moves it), then its
  units returned (PUT /returnStock/{id}: exactly what it deducted, once).
- released or expired whose units are still owed (the release's or the expiry's own return
  got no answer), last moved more than RETURN_AGE ago: the return asked again (idempotent).

Each reservation is served alone (order_service/settling/pages.py): one whose handling raises (its
row locked by a paused process past DB_LOCK_TIMEOUT_MS, a stock answer it cannot read) is
logged, counted and skipped, and the pass goes on past it; the next pass tries it again.

So a held reservation expires, and its units come back, by its expiresAt plus one
RECONCILE_INTERVAL and the pass's own time, while a reconciler leads and the stock service
answers (a new leader's election adds its takeover, the lock service's session timeout). Every
write carries the leader's fence (transitions.fenced): a deposed leader's is refused. Nothing
here is done on a client's read.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from order_service.placing import StockClient
from order_service.reservations import (
    EXPIRED,
    HELD,
    OWING,
    PENDING,
    Reservation,
    ReservationStore,
    Reserved,
    Settlement,
    learn,
)
from order_service.settling.pages import serve_kind, serve_pages
from order_service.storage.transitions import Fence

log = logging.getLogger(__name__)
# A release's or an expiry's return is its own call first; the pass asks for those older.
RETURN_AGE = timedelta(seconds=10)
EXPIRED_UNUSED = "expired: neither consumed nor released in time"


@dataclass
class ReservationReport:
    settled: list[str] = field(default_factory=list)  # pending: now held or failed
    expired: list[str] = field(default_factory=list)
    returned: list[str] = field(default_factory=list)  # units back (expired or released)
    skipped: list[str] = field(default_factory=list)  # handling raised: the next pass again
    unreachable: int = 0


def reconcile_reservations(
    reservations: Settlement,
    stock: StockClient,
    now: datetime,
    older_than: timedelta,
    fence: Fence | None = None,
    before_write: Callable[[], None] = lambda: None,
    page_size: int = 200,
) -> ReservationReport:
    """One pass over the reservations (the module's docstring)."""
    store = reservations.store
    report = ReservationReport()

    def settle(r: Reservation) -> None:
        decision = learn(stock, r.id)
        if decision is None or decision.outcome is None:
            report.unreachable += 1
            return
        before_write()
        after = reservations.settle(r.id, decision, r.ttl_seconds, fence).reservation
        if after.state != PENDING:
            report.settled.append(r.id)
            log.warning("reservation %s was pending; the stock database says %s", r.id, after.state)

    def returned(r: Reservation, done: Reserved) -> None:
        if done.unavailable:
            report.unreachable += 1
        elif done.reservation.returned_at is not None:
            report.returned.append(r.id)

    def expire_one(r: Reservation) -> None:
        before_write()
        done = expire(reservations, r, fence)
        if done is not None:
            report.expired.append(r.id)
            returned(r, done)

    def give_back(r: Reservation) -> None:
        before_write()
        returned(r, reservations.give_back(r, fence))

    skipped = report.skipped
    _pages("reservations_pending", store, (PENDING,), now - older_than, page_size, settle, skipped)
    _pages("reservations_held", store, (HELD,), now, page_size, expire_one, skipped, by_expiry=True)
    _pages(
        "reservations_owing",
        store,
        OWING,
        now - RETURN_AGE,
        page_size,
        give_back,
        skipped,
        owing=True,
    )
    return report


def expire(reservations: Settlement, r: Reservation, fence: Fence | None) -> Reserved | None:
    """A held reservation past its expires_at: expired by the compare-and-set from `held`
    whose condition is that expires_at has passed (by this transaction's clock), then its
    units returned (PUT /returnStock/{id}). None: it had moved on (consumed, released, or
    expired by another pass) or is not due yet, and nothing was done."""
    moved, after = reservations.store.move(r.id, (HELD,), EXPIRED, EXPIRED_UNUSED, fence, due=True)
    if not moved or after is None:
        return None
    log.info("reservation %s expired", r.id)
    return reservations.give_back(after, fence)


def _pages(
    name: str,
    store: ReservationStore,
    states: Collection[str],
    before: datetime,
    page_size: int,
    act: Callable[[Reservation], None],
    skipped: list[str],
    by_expiry: bool = False,
    owing: bool = False,
) -> None:
    """Every page of the reservations in `states`, each served alone, and the kind alone
    (settling/pages.py: a listing that fails leaves the next kind served)."""

    def key(r: Reservation) -> tuple[datetime, str]:
        stamp = r.expires_at if by_expiry else r.updated_at
        assert stamp is not None
        return stamp, r.id

    serve_kind(
        name,
        lambda: serve_pages(
            name,
            lambda after: store.page(states, before, after, page_size, by_expiry, owing),
            key,
            act,
            page_size,
            skipped,
        ),
    )
