"""Reservations: units held for a cart (POST /reservations), released (DELETE) or turned into
an order (genOrder's reservationId: order_service/reservations/orders.py), and expired by the
elected reconciler (order_service/settling/reservations.py).

A reservation is made as genOrder makes an order, with the same steps and guarantees: its row
committed `pending` (with its lines) before anything else, its id written as the operation flag
in Redis, then PUT /reduceStock/{id}?hold=true (all or nothing; a line may name its location):
the reservation's id IS its stock flag, so the stock database's decision table keeps it to one
deduction whatever the retries, and its units are counted as held (GET /stock's `held`) until
the order made of it is paid or confirmed, or they come back.

An outcome the request could not learn (no answer, a `duplicate` without rows, a flag Redis
kept losing) is asked of the stock database (GET /flags/{id}); still undecided, the flag is
voided on the spot (PUT /voidFlag/{id}: deducted after all, or nothing ever will be). A
reservation is no sale: its buyer can ask again, so voiding loses nothing a shop keeps, and the
buyer learns a final answer in the same request. Only when the stock service cannot be reached
at all is it left `pending` (503, naming it), and the elected reconciler settles it the same
way once it is older than one request's budget. Nothing is held by a row that is not written,
and no row says held whose deduction is not decided.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import redis
from sqlalchemy.exc import IntegrityError

from order_service.core.fills import ALL, Fill
from order_service.core.model import IdempotencyKeyReused, StockRejected
from order_service.core.statuses import INSUFFICIENT_STOCK, REDIS_UNAVAILABLE
from order_service.placing import REJECTED, OrderBatches, StockAnswer, StockClient, StockDecision
from order_service.reservations.settlement import (
    STOCK_SERVICE,
    Reserved,
    Settlement,
    UnknownReservation,
    learn,
)
from order_service.reservations.store import (
    EXPIRED,
    HELD,
    PENDING,
    RELEASED,
    Reservation,
    ReservationStore,
)
from shared.contract import Decided, Outcome
from shared.ids import new_id
from shared.logs import log_context

# Settlement, Reserved, learn and UnknownReservation live in reservations/settlement.py (what a
# request and the reconciler both do); named here too, where their importers find them.
__all__ = ["Reservations", "Reserved", "Settlement", "UnknownReservation", "learn"]
log = logging.getLogger(__name__)
RELEASED_BY_BUYER = "released: by the buyer"


class Reservations(Settlement):
    """POST and DELETE /reservations (a genOrder's consume: reservations/orders.py)."""

    def __init__(
        self,
        store: ReservationStore,
        stock: StockClient,
        batches: OrderBatches,
        redis_client: redis.Redis,
        idempotency_wait: float = 0.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(store, stock)
        self.batches = batches
        self.redis = redis_client
        self.idempotency_wait = idempotency_wait
        self.sleep = sleep

    def reserve(
        self,
        user_id: str | None,
        lines: Mapping[str, int],
        fill: Fill,
        ttl: int,
        key: str | None = None,
    ) -> Reserved:
        """Hold `lines` for `ttl` seconds from the deduction's confirmation: all or nothing.
        Under an Idempotency-Key already used, nothing new: the reservation it made."""
        fingerprint = reservation_fingerprint(user_id, lines, fill.locations, ttl)
        if key is not None:
            existing = self.store.by_key(key)
            replayed = self.replay(existing, fingerprint) if existing is not None else None
            if replayed is not None:
                return replayed
        rid = new_id()
        log_context(flag=rid, order_id=rid)
        try:
            self.store.create(
                rid, user_id, lines, fill.locations, ttl, (key, fingerprint) if key else None
            )
        except IntegrityError:
            if key is None:
                raise
            # Two posts with one key raced: the unique key let one row through (ids are new);
            # none found, that one was rejected (unknown goods) and removed since: ask again.
            again = self.store.by_key(key)
            replayed = self.replay(again, fingerprint) if again is not None else None
            return replayed or self.reserve(user_id, lines, fill, ttl, key)
        if not self.batches.write_flags([rid]):
            # No flag, so no stock call: nothing was or will be deducted under it.
            why = f"{REDIS_UNAVAILABLE}: the flag was not written"
            return Reserved(self._fail(rid, why), unavailable="redis")
        fills = {} if fill.plain else {rid: fill}
        wanted = {rid: dict(lines)}
        answer = self.batches.call_stock(wanted, holds=frozenset({rid}), fills=fills)[rid]
        body = answer.body if isinstance(answer.body, dict) else {}
        if answer.outcome == Outcome.DEDUCTED and _matches(lines, body.get("flows")):
            return self.settle(rid, StockDecision(Decided.DEDUCTED, body["flows"], body), ttl)
        if answer.outcome == Outcome.INSUFFICIENT:
            shortfalls = list(body.get("shortfalls") or [])
            return Reserved(self._fail(rid, INSUFFICIENT_STOCK), shortfalls=shortfalls)
        if answer.outcome == REJECTED:
            raise self.undo_rejected(rid, answer)
        unavailable = "redis" if answer.outcome == Outcome.UNKNOWN_FLAG else STOCK_SERVICE
        decision = learn(self.stock, rid)
        deducted = decision is not None and decision.outcome == Decided.DEDUCTED
        if deducted and decision and not _matches(lines, decision.flows):  # never guessed
            log.error("reservation %s: flows %s", rid, decision.deducted_lines())
            return Reserved(self.get(rid), unavailable=unavailable)
        after = self.settle(rid, decision, ttl).reservation
        # A final answer needs no dependency named: held, refused for lack of stock, or
        # released meanwhile by its buyer. Voided or still pending: the dependency's fault.
        final = after.state in (HELD, RELEASED) or after.reason == INSUFFICIENT_STOCK
        return Reserved(after, None if final else unavailable)

    def replay(self, existing: Reservation, fingerprint: str) -> Reserved | None:
        """A repeat of an Idempotency-Key: the reservation its first post made, as it is once
        that post has finished (held, failed, or moved on since); another body: refused. None:
        it was rejected (unknown goods or locations) and removed meanwhile, the key free."""
        log_context(flag=existing.id, order_id=existing.id)
        if existing.request_hash != fingerprint:
            raise IdempotencyKeyReused(existing.id)
        found: Reservation | None = existing
        deadline = time.monotonic() + self.idempotency_wait
        while found is not None and found.state == PENDING and time.monotonic() < deadline:
            self.sleep(0.05)  # the first post is still asking the stock service
            found = self.store.get(existing.id)
        if found is None:
            return None
        if found.state == HELD:  # past its expiresAt it is expired, not answered held (201)
            found = self.expire_if_due(found).reservation
        return Reserved(found, replayed=True)

    def release(self, reservation_id: str) -> Reserved:
        """DELETE: pending (its outcome unknown) or held before its expiresAt -> released, a
        compare-and-set; then its units back (PUT /returnStock: exactly what the flag
        deducted, once, or the flag voided if nothing was). A repeat answers released and
        returns nothing twice; a consumed, expired or failed one is refused, and so is one
        held past its expiresAt: from then on it can only expire, as a consume is refused."""
        found = self.get(reservation_id)
        if found.state == PENDING:
            _, after = self.store.move(reservation_id, (PENDING,), RELEASED, RELEASED_BY_BUYER)
            found = after or found
        if found.state == HELD:
            _, after = self.store.move(
                reservation_id, (HELD,), RELEASED, RELEASED_BY_BUYER, due=False
            )
            found = after or found
        if found.state == RELEASED:
            return self.give_back(found) if found.returned_at is None else Reserved(found)
        return Reserved(found, refused=EXPIRED if found.state == HELD else found.state)

    def undo_rejected(self, rid: str, answer: StockAnswer) -> StockRejected:
        """Unknown goods or locations: nothing of the reservation is kept (unless a release
        took it meanwhile), its flag deleted; nothing could be deducted for it."""
        if not self.store.remove_pending(rid):
            log.info("reservation %s was rejected after a release took it", rid)
        try:
            self.redis.delete(rid)
        except redis.RedisError:
            log.warning("could not delete flag %s of a rejected reservation", rid)
        body = answer.body if isinstance(answer.body, dict) else {}
        unknown = body.get("goodsIds")
        places = body.get("locations") if unknown is None else None
        return StockRejected(
            str(body.get("error") or "rejected by the stock service"),
            list(unknown) if unknown is not None else None,
            list(places) if places is not None else None,
        )


def reservation_fingerprint(
    user_id: str | None, lines: Mapping[str, int], locations: Mapping[str, str], ttl: int
) -> str:
    """What a repeat under the same Idempotency-Key must ask for again: the buyer, the lines
    (merged per goods id), where each is held from, and the time to live."""
    fields = {"userId": user_id, "lines": dict(lines), "locations": dict(locations), "ttl": ttl}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


def _matches(lines: Mapping[str, int], flows: Any) -> bool:
    """The flows are exactly the reservation's lines (all or nothing)."""
    return ALL.policy.filled(lines, flows) is not None
