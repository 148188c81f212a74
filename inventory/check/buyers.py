"""What each buyer holds of a goods id with a per-buyer limit (PUT /buyer-limits/{goodsId}
`{"perBuyer": n}`, docs/http-api.md): the orders of some goods ids as the order database keeps
them, with their buyer (`user_id`), and the units each buyer has in the orders that count
against the limit (every status but FAILED and CANCELLED). Read by the chaos run's PB
(inventory/chaos/buyer_limits.py) and by `inventory demo flash-sale`."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from sqlalchemy import Engine, select

from order_service.storage.tables import order_details, orders

LIMIT_PER_BUYER = "limit_per_buyer"  # the reason of an order refused by the limit
NOT_COUNTED = ("FAILED", "CANCELLED")  # the statuses whose units count for no buyer


@dataclass(frozen=True)
class BuyerOrder:
    order_id: str
    user: str
    status: str
    reason: str | None
    lines: dict[str, int] = field(default_factory=dict)  # goods id read -> units

    @property
    def refused_by_the_limit(self) -> bool:
        return self.status == "FAILED" and (self.reason or "").startswith(LIMIT_PER_BUYER)


def held_units(found: Iterable[BuyerOrder], goods_id: str) -> dict[str, int]:
    """Buyer -> the units of `goods_id` in their orders that count against its limit."""
    held: dict[str, int] = defaultdict(int)
    for order in found:
        if order.status not in NOT_COUNTED and order.lines.get(goods_id):
            held[order.user] += order.lines[goods_id]
    return dict(held)


def over_the_limit(found: Sequence[BuyerOrder], limits: dict[str, int]) -> dict[str, int]:
    """`goods id/buyer` -> units held, for every buyer above a goods id's limit."""
    return {
        f"{goods_id}/{user}": units
        for goods_id, limit in sorted(limits.items())
        for user, units in sorted(held_units(found, goods_id).items())
        if units > limit
    }


def read_buyer_orders(
    order_engine: Engine, goods_ids: Sequence[str], ids: Sequence[str] = (), chunk: int = 500
) -> dict[str, BuyerOrder]:
    """Order id -> the order, for every order with a line of one of `goods_ids`, and the
    orders `ids` names (an answer's order, whatever its lines); its `lines`: its units of
    `goods_ids` (the lines of other goods are not read)."""
    rows: dict[str, tuple[str, str, str | None]] = {}
    lines: dict[str, dict[str, int]] = defaultdict(dict)
    o, d = orders.c, order_details.c
    query = select(o.id, o.user_id, o.status, o.reason, d.goods_id, d.goods_num).join(
        order_details, order_details.c.order_id == orders.c.id
    )
    with order_engine.connect() as conn:
        wanted = list(goods_ids)
        for i in range(0, len(wanted), chunk):
            for r in conn.execute(query.where(d.goods_id.in_(wanted[i : i + chunk]))):
                rows[r.id] = (r.user_id, r.status, r.reason)
                lines[r.id][r.goods_id] = lines[r.id].get(r.goods_id, 0) + r.goods_num
        named = sorted(set(ids) - set(rows))
        for i in range(0, len(named), chunk):
            part = named[i : i + chunk]
            alone = select(o.id, o.user_id, o.status, o.reason).where(o.id.in_(part))
            for one in conn.execute(alone):
                rows[one.id] = (one.user_id, one.status, one.reason)
    return {
        order_id: BuyerOrder(order_id, user, status, reason, dict(lines.get(order_id, {})))
        for order_id, (user, status, reason) in rows.items()
    }
