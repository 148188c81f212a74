"""The order database's statements, built once and run with parameters (as the stock
store's): building an expression and its cache key on each call cost about 0.3 ms per order.
order_service/storage/store.py runs them."""

from __future__ import annotations

from sqlalchemy import and_, bindparam, delete, insert, or_, select, update

from order_service.core.statuses import PENDING
from order_service.storage.tables import hold_release, order_details, orders, reconciler_fence

# The fence row's update takes its row lock to the commit: two reconcilers that both believe
# they lead are serialized there, and the older one, once the newer has written, is refused.
# (epoch, token) pairs, compared in that order: a raised epoch starts the tokens again.
_FENCE = reconciler_fence.c
FENCE_ADVANCE = (
    update(reconciler_fence)
    .where(
        reconciler_fence.c.name == "reconciler",
        or_(
            _FENCE.epoch < bindparam("e"),
            and_(_FENCE.epoch == bindparam("e"), _FENCE.token <= bindparam("t")),
        ),
    )
    .values(epoch=bindparam("e"), token=bindparam("t"))
)
FENCE_READ = select(reconciler_fence.c.epoch, reconciler_fence.c.token).where(
    reconciler_fence.c.name == "reconciler"
)
INSERT_ORDER = insert(orders)
INSERT_DETAILS = insert(order_details)
FINISH = (
    update(orders)
    .where(orders.c.id == bindparam("order_id"), orders.c.status == PENDING)
    .values(
        status=bindparam("status"),
        reason=bindparam("reason"),
        updated_at=bindparam("at"),
        pay_deadline=bindparam("deadline"),
    )
)
READ_STATE = select(
    orders.c.status, orders.c.reason, orders.c.pay_deadline, orders.c.paid_at
).where(orders.c.id == bindparam("order_id"))
# A batch's finishes: one compare-and-set from PENDING for every order going to the same
# (status, reason, deadline), and its states read back in one query when one did not move.
FINISH_GROUP = (
    update(orders)
    .where(orders.c.id.in_(bindparam("ids", expanding=True)), orders.c.status == PENDING)
    .values(
        status=bindparam("status"),
        reason=bindparam("reason"),
        updated_at=bindparam("at"),
        pay_deadline=bindparam("deadline"),
    )
)
READ_STATES = select(
    orders.c.id, orders.c.status, orders.c.reason, orders.c.pay_deadline, orders.c.paid_at
).where(orders.c.id.in_(bindparam("ids", expanding=True)))
RECORD_SHORTFALL = (
    update(order_details)
    .where(order_details.c.order_id == bindparam("o"), order_details.c.goods_id == bindparam("g"))
    .values(available=bindparam("a"), seed_version=bindparam("v"))
)
INSERT_HOLD_RELEASE = insert(hold_release)
DELETE_HOLD_RELEASE = delete(hold_release).where(hold_release.c.order_id == bindparam("o"))
# The paid holds still to release, oldest first, created before a time (the pay's own call
# gets the time to do it first).
HOLD_RELEASES = (
    select(hold_release.c.order_id)
    .where(hold_release.c.created_at < bindparam("before"))
    .order_by(hold_release.c.created_at, hold_release.c.order_id)
    .limit(bindparam("limit"))
)
