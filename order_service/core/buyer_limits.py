"""The flash-sale rules per buyer (docs/buyer-limits.md), as pure logic: what a goods id's limits
are, and which of a sequence of requests they refuse, given what each buyer had before them.

- perBuyer: the units of the goods id one userId may have in orders that are not FAILED or
  CANCELLED, across all its orders (this one's units included);
- maxHeld: the units of the goods id one userId may hold at once in reservations (pending or
  held) and unpaid holds (orders with payWithinSeconds, PENDING or AWAITING_PAYMENT), this
  request's included; a goods id's own, else the default (BUYER_MAX_HELD_DEFAULT), else none.

The requests of one transaction (a batch of genOrders) are judged in order: a request that
passes adds its units to its buyer's counts for the next, one refused adds nothing, so a
member's refusal never changes another member's answer beyond what one-at-a-time would. The
counts come from the rows (order_service/storage/buyer_limits.py): nothing is decremented when
an order fails or is cancelled, so no path can make them drift.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from order_service.core.statuses import LIMIT_HELD, LIMIT_PER_BUYER
from shared.config.settings_checks import BUYER_LIMIT_CEILING

PER_BUYER = LIMIT_PER_BUYER
HELD = LIMIT_HELD
REASONS = (PER_BUYER, HELD)
# A limit's largest value (PUT /buyer-limits: above it, 422): the stock service's largest level.
BUYER_LIMIT_MAX = BUYER_LIMIT_CEILING
# The stored reason of a refused order: its code, then what the answer names.
_TEXT = re.compile(r"^(limit_per_buyer|limit_held): goodsId=(.+) limit=(\d+) had=(\d+)$")

Pair = tuple[str, str]  # (user id, goods id)


@dataclass(frozen=True)
class Limits:
    """A goods id's rules as the admin set them (None: no limit; maxHeld None: the default)."""

    per_buyer: int | None = None
    max_held: int | None = None

    def held_cap(self, default: int | None) -> int | None:
        return self.max_held if self.max_held is not None else default


@dataclass(frozen=True)
class LimitRefusal:
    """A request refused: `had` units were counted before it, `limit` is the rule's."""

    reason: str
    goods_id: str
    limit: int
    had: int

    def text(self) -> str:
        """As the order's reason records it (at most 200 characters: a goods id is 64)."""
        return f"{self.reason}: goodsId={self.goods_id} limit={self.limit} had={self.had}"

    @classmethod
    def parse(cls, reason: str | None) -> LimitRefusal | None:
        found = _TEXT.match(reason or "")
        if found is None:
            return None
        code, goods_id, limit, had = found.groups()
        return cls(code, goods_id, int(limit), int(had))

    def message(self) -> str:
        if self.reason == PER_BUYER:
            return (
                f"at most {self.limit} units of {self.goods_id} per buyer; this buyer has "
                f"{self.had} in orders not failed or cancelled: nothing was deducted"
            )
        return (
            f"at most {self.limit} units of {self.goods_id} held per buyer; this buyer holds "
            f"{self.had} in reservations and unpaid holds: nothing is held"
        )

    def fields(self) -> dict[str, object]:
        """The answer's fields (a 409's body)."""
        return {
            "reason": self.reason,
            "goodsId": self.goods_id,
            "limit": self.limit,
            "had": self.had,
            "error": self.message(),
        }


class LimitExceeded(Exception):
    """A request refused by a buyer limit, nothing of it written (a reservation, a consume)."""

    def __init__(self, refusal: LimitRefusal) -> None:
        super().__init__(refusal.message())
        self.refusal = refusal


@dataclass(frozen=True)
class Wanted:
    """One request to judge: its id, buyer, units per goods id; `orders`: it is an order
    (counted by perBuyer); `holds`: its units are held until paid or released (maxHeld)."""

    key: str
    user_id: str | None
    lines: Mapping[str, int]
    orders: bool = True
    holds: bool = False


def limited_pairs(
    wanted: Iterable[Wanted], limits: Mapping[str, Limits], held_default: int | None
) -> list[Pair]:
    """The (buyer, goods id) pairs some rule applies to, sorted (the order they are locked in,
    so two transactions never wait for each other in a circle)."""
    pairs: set[Pair] = set()
    for w in wanted:
        if w.user_id is None:
            continue
        for goods_id in w.lines:
            rules = limits.get(goods_id, Limits())
            per_buyer = w.orders and rules.per_buyer is not None
            held = w.holds and rules.held_cap(held_default) is not None
            if per_buyer or held:
                pairs.add((w.user_id, goods_id))
    return sorted(pairs)


def judge(
    wanted: Iterable[Wanted],
    limits: Mapping[str, Limits],
    held_default: int | None,
    had: Mapping[Pair, int],
    held: Mapping[Pair, int],
) -> dict[str, LimitRefusal]:
    """The refused requests (by key), judged in order; `had` and `held`: what each buyer had of
    each goods id before the first."""
    had_now, held_now = dict(had), dict(held)
    refused: dict[str, LimitRefusal] = {}
    for w in wanted:
        if w.user_id is None:
            continue
        refusal = _first_refusal(w, limits, held_default, had_now, held_now)
        if refusal is not None:
            refused[w.key] = refusal
            continue
        for goods_id, units in w.lines.items():
            pair = (w.user_id, goods_id)
            if w.orders:
                had_now[pair] = had_now.get(pair, 0) + units
            if w.holds:
                held_now[pair] = held_now.get(pair, 0) + units
    return refused


def _first_refusal(
    w: Wanted,
    limits: Mapping[str, Limits],
    held_default: int | None,
    had: Mapping[Pair, int],
    held: Mapping[Pair, int],
) -> LimitRefusal | None:
    assert w.user_id is not None
    for goods_id in sorted(w.lines):
        units = w.lines[goods_id]
        rules = limits.get(goods_id, Limits())
        pair = (w.user_id, goods_id)
        if w.orders and rules.per_buyer is not None:
            before = had.get(pair, 0)
            if before + units > rules.per_buyer:
                return LimitRefusal(PER_BUYER, goods_id, rules.per_buyer, before)
        cap = rules.held_cap(held_default)
        if w.holds and cap is not None:
            before = held.get(pair, 0)
            if before + units > cap:
                return LimitRefusal(HELD, goods_id, cap, before)
    return None
