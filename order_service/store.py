"""SQL of the order database: create, finish, look up and (for a rejected request) remove."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, bindparam, delete, insert, select, update

from order_service.tables import order_details, orders, reconciler_fence
from shared.db import transaction
from shared.db import utcnow as now
from shared.ids import new_id

DB = "order database"
PENDING, CONFIRMED, FAILED = "PENDING", "CONFIRMED", "FAILED"
INSUFFICIENT_STOCK = "insufficient_stock"  # the reason of an order refused for lack of stock


# The fence row's update takes its row lock to the commit: two reconcilers that both believe
# they lead are serialized there, and the older one, once the newer has written, is refused.
FENCE_ADVANCE = (
    update(reconciler_fence)
    .where(reconciler_fence.c.name == "reconciler", reconciler_fence.c.token <= bindparam("t"))
    .values(token=bindparam("t"))
)
FENCE_READ = select(reconciler_fence.c.token).where(reconciler_fence.c.name == "reconciler")


class Superseded(Exception):
    """A reconciler leader's write was refused: a newer leader has written."""


@dataclass(frozen=True)
class OrderRow:
    id: str
    user_id: str
    status: str
    reason: str | None
    request_hash: str | None
    lines: dict[str, int]
    created_at: datetime
    updated_at: datetime

    def as_json(self) -> dict[str, Any]:
        return {
            "orderId": self.id,
            "userId": self.user_id,
            "status": self.status,
            "reason": self.reason,
            "items": [{"goodsId": g, "num": n} for g, n in sorted(self.lines.items())],
            "createTime": self.created_at.isoformat(),
            "updateTime": self.updated_at.isoformat(),
        }


class OrderStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def create_pending(
        self,
        order_id: str,
        user_id: str,
        lines: dict[str, int],
        idempotency_key: str | None,
        request_hash: str | None,
    ) -> None:
        """The order and its details in one transaction. A repeated idempotency key raises
        IntegrityError and writes nothing."""
        stamp = now()
        with transaction(self.engine, DB) as conn:
            conn.execute(
                insert(orders).values(
                    id=order_id,
                    user_id=user_id,
                    status=PENDING,
                    reason=None,
                    idempotency_key=idempotency_key,
                    request_hash=request_hash,
                    created_at=stamp,
                    updated_at=stamp,
                )
            )
            conn.execute(
                insert(order_details),
                [
                    {"id": new_id(), "order_id": order_id, "goods_id": g, "goods_num": n}
                    for g, n in sorted(lines.items())
                ],
            )

    def finish(
        self,
        order_id: str,
        status: str,
        reason: str | None,
        shortfalls: list[dict[str, Any]] | None = None,
    ) -> None:
        """Move a PENDING order to its outcome (or record why it is still PENDING), with the
        shortfall of each line the stock service refused, in one transaction."""
        with transaction(self.engine, DB) as conn:
            moved = conn.execute(
                update(orders)
                .where(orders.c.id == order_id, orders.c.status == PENDING)
                .values(status=status, reason=reason, updated_at=now())
            ).rowcount
            if not moved:
                return  # settled already (a replay, the reconciler): leave it as it is
            for short in shortfalls or []:
                conn.execute(
                    update(order_details)
                    .where(
                        order_details.c.order_id == order_id,
                        order_details.c.goods_id == short.get("goodsId"),
                    )
                    .values(
                        available=_int_or_none(short.get("available")),
                        seed_version=_int_or_none(short.get("seedVersion")),
                    )
                )

    def settle(
        self, order_id: str, was: str, status: str, reason: str, fence: int | None = None
    ) -> bool:
        """Reconciliation: move an order from `was` to `status`; False if it had moved on.
        With `fence` (the elected reconciler's leader token), the write first moves the
        reconciler fence up to it, in the same transaction; a newer leader's token there
        means this one was deposed: Superseded, nothing written."""
        with transaction(self.engine, DB) as conn:
            if fence is not None and not conn.execute(FENCE_ADVANCE, {"t": fence}).rowcount:
                newer = conn.execute(FENCE_READ).scalar_one_or_none()
                raise Superseded(
                    f"write refused: a newer reconciler leader (token {newer}) has written "
                    f"since this one (token {fence}) was elected"
                )
            moved = conn.execute(
                update(orders)
                .where(orders.c.id == order_id, orders.c.status == was)
                .values(status=status, reason=reason[:200], updated_at=now())
            ).rowcount
        return moved == 1

    def unsettled(self, created_after: datetime, created_before: datetime) -> list[OrderRow]:
        """PENDING and FAILED orders created in the window: the ones whose flows may have
        appeared after the request gave up."""
        with transaction(self.engine, DB, read_only=True) as conn:
            ids = (
                conn.execute(
                    select(orders.c.id).where(
                        orders.c.status.in_((PENDING, FAILED)),
                        orders.c.created_at >= created_after,
                        orders.c.created_at < created_before,
                    )
                )
                .scalars()
                .all()
            )
        found = (self.get(order_id) for order_id in ids)
        return [order for order in found if order is not None]

    def remove(self, order_id: str) -> None:
        """Undo an order the stock service rejected as invalid: nothing of it is kept."""
        with transaction(self.engine, DB) as conn:
            conn.execute(delete(order_details).where(order_details.c.order_id == order_id))
            conn.execute(delete(orders).where(orders.c.id == order_id))

    def get(self, order_id: str) -> OrderRow | None:
        return self._one(orders.c.id == order_id)

    def by_idempotency_key(self, key: str) -> OrderRow | None:
        return self._one(orders.c.idempotency_key == key)

    def _one(self, condition: Any) -> OrderRow | None:
        with transaction(self.engine, DB, read_only=True) as conn:
            row = conn.execute(select(orders).where(condition)).mappings().first()
            if row is None:
                return None
            lines = {
                d.goods_id: d.goods_num
                for d in conn.execute(
                    select(order_details.c.goods_id, order_details.c.goods_num).where(
                        order_details.c.order_id == row["id"]
                    )
                )
            }
        return OrderRow(
            row["id"],
            row["user_id"],
            row["status"],
            row["reason"],
            row["request_hash"],
            lines,
            row["created_at"],
            row["updated_at"],
        )


def _int_or_none(value: Any) -> int | None:
    """The stock service's numbers, taken only if they are numbers."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None
