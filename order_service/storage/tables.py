"""The order database: orders (with their idempotency key) and order details."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
)

from shared.database.columns import HASH, IDEMPOTENCY_KEY, IDENTIFIER, NEW_ID, Exact, joined_text
from shared.database.engines import Timestamp

metadata = MetaData()

orders = Table(
    "orders",
    metadata,
    Column("id", Exact(NEW_ID), primary_key=True),
    Column("user_id", Exact(IDENTIFIER), nullable=False),
    # PENDING, CONFIRMED, FAILED, AWAITING_PAYMENT (a hold), BACKORDERED, CANCELLING, CANCELLED
    Column("status", String(16), nullable=False),
    Column("reason", String(200), nullable=True),  # why FAILED, or why still PENDING
    # Unique: a repeat of a key finds the first order instead of inserting a second one.
    Column("idempotency_key", Exact(IDEMPOTENCY_KEY), nullable=True, unique=True),
    Column("request_hash", Exact(HASH), nullable=True),
    Column("created_at", Timestamp, nullable=False),
    Column("updated_at", Timestamp, nullable=False),
    # A hold (genOrder's payWithinSeconds): its seconds to pay in, and, once its deduction is
    # confirmed, the deadline they make: paid by then, or cancelled by the reconciler.
    Column("pay_within", Integer, nullable=True),
    Column("pay_deadline", Timestamp, nullable=True),
    Column("paid_at", Timestamp, nullable=True),
    # "partial" (genOrder's fill): confirmed with what the stock could fill; "backorder": what
    # was on hand, the rest owed (BACKORDERED until filled); null: all or nothing, as every
    # order placed before it existed (order_service/core/fills.py)
    Column("fill_mode", String(16), nullable=True),
    # The reconciler pages through the PENDING and CANCELLING orders, oldest first, and the
    # holds by their deadline.
    Index("ix_orders_status_created", "status", "created_at"),
    Index("ix_orders_status_deadline", "status", "pay_deadline"),
    # A buyer's orders, for the flash-sale rules' count of what one userId has of a goods id
    # (order_service/storage/buyer_limits.py).
    Index("ix_orders_user_status", "user_id", "status"),
)

order_details = Table(
    "order_details",
    metadata,
    Column("id", Exact(NEW_ID), primary_key=True),
    Column("order_id", Exact(NEW_ID), ForeignKey("orders.id"), nullable=False, index=True),
    Column("goods_id", Exact(IDENTIFIER), nullable=False),
    Column("goods_num", Integer, nullable=False),
    # Set only on a line refused for lack of stock: what the stock service had, and the seed
    # version of that level. The checker tells a lost sale from a refusal that was right then.
    Column("available", Integer, nullable=True),
    Column("seed_version", Integer, nullable=True),
    # The location the line names (taken from there or not at all); null: wherever the stock
    # service allocates it.
    Column("location", Exact(IDENTIFIER), nullable=True),
    # The units filled, recorded when an order that asked for a fill or a location is
    # confirmed (a backorder: those taken on hand when BACKORDERED, with what was handed to it
    # as the reconciler last saw it, its lines whole once CONFIRMED); null for the others
    # (filled whole once deducted), and before.
    Column("filled", Integer, nullable=True),
)

# Where the stock service took a confirmed order's units from (its answer's `allocations`),
# kept with the order when they name a location other than `default`.
order_allocation = Table(
    "order_allocation",
    metadata,
    Column("order_id", Exact(NEW_ID), ForeignKey("orders.id"), primary_key=True),
    Column("goods_id", Exact(IDENTIFIER), primary_key=True),
    Column("location_id", Exact(IDENTIFIER), primary_key=True),
    Column("num", Integer, nullable=False),
)

# The fence of the elected reconciler: the highest (epoch, leader token) that has written. A
# write of a leader whose pair is lower (one that lost leadership and did not notice) is
# refused. The epoch is the operator's (RECONCILER_EPOCH): raised after the lock service was
# rebuilt, whose tokens start again from small numbers.
reconciler_fence = Table(
    "reconciler_fence",
    metadata,
    Column("name", String(40), primary_key=True),
    Column("token", BigInteger, nullable=False),
    Column("epoch", BigInteger, nullable=False, server_default="0"),
)

# The paid holds whose units the stock service still counts as held: written in the pay's own
# transaction (a small outbox), deleted once PUT /holds/{flag}/release answered; the elected
# reconciler sends what a pay could not.
hold_release = Table(
    "hold_release",
    metadata,
    Column("order_id", Exact(NEW_ID), primary_key=True),
    Column("created_at", Timestamp, nullable=False),
    Index("ix_hold_release_created", "created_at"),
)

# Reservations (POST /reservations): units held for a cart under the lock, as a stock-side hold
# of the reservation's own flag (its id). `state` moves by compare-and-sets only
# (order_service/reservations/store.py): pending -> held | failed while its deduction is
# decided, then held -> exactly one of consumed (its order, whose id is the reservation's),
# released or expired. `returned_at`: when the stock service took a released or expired
# reservation's units back (null: still owed; the elected reconciler asks again).
reservations = Table(
    "reservations",
    metadata,
    Column("id", Exact(NEW_ID), primary_key=True),
    Column("user_id", Exact(IDENTIFIER), nullable=True),
    Column("state", String(16), nullable=False),
    Column("reason", String(200), nullable=True),
    Column("ttl_seconds", Integer, nullable=False),
    Column("created_at", Timestamp, nullable=False),
    Column("updated_at", Timestamp, nullable=False),
    Column("expires_at", Timestamp, nullable=True),  # set when held: then + ttl_seconds
    Column("returned_at", Timestamp, nullable=True),
    # The stock service's `allocations` of its deduction, as JSON text (where each unit is).
    Column("allocations", joined_text(), nullable=True),
    # POST /reservations' Idempotency-Key (unique: of two racing posts one row gets through)
    # and the fingerprint of the request that made it (a repeat with another body: 422).
    Column("idempotency_key", Exact(IDEMPOTENCY_KEY), nullable=True),
    Column("request_hash", Exact(HASH), nullable=True),
    # The reconciler pages through the pending and owed ones by age, the held by expiry.
    Index("ix_reservations_state_updated", "state", "updated_at"),
    Index("ux_reservations_idempotency_key", "idempotency_key", unique=True),
    Index("ix_reservations_state_expires", "state", "expires_at"),
)

reservation_lines = Table(
    "reservation_lines",
    metadata,
    Column("reservation_id", Exact(NEW_ID), ForeignKey("reservations.id"), primary_key=True),
    Column("goods_id", Exact(IDENTIFIER), primary_key=True),
    Column("num", Integer, nullable=False),
    Column("location", Exact(IDENTIFIER), nullable=True),  # the line's named location, if any
)
# A reservation's buyer, for the flash-sale rules' count of the units one userId holds.
Index("ix_reservations_user_state", reservations.c.user_id, reservations.c.state)

# The flash-sale rules of a goods id (PUT /buyer-limits/{goodsId}, docs/buyer-limits.md): the
# units one userId may have in orders not FAILED or CANCELLED (`per_buyer`), and hold at once
# in reservations and unpaid holds (`max_held`; null: BUYER_MAX_HELD_DEFAULT). No row: none.
buyer_limits = Table(
    "buyer_limits",
    metadata,
    Column("goods_id", Exact(IDENTIFIER), primary_key=True),
    Column("per_buyer", BigInteger, nullable=True),
    Column("max_held", BigInteger, nullable=True),
    Column("updated_at", Timestamp, nullable=False),
)

# One row per (buyer, goods id) under a limit, written if absent and locked (FOR UPDATE) by the
# transaction that creates an order or a reservation of it: two of one buyer's requests for one
# goods id are decided one after the other, each counting what the buyer has in its rows. It
# holds no count: a cancel or a failure changes the orders, and the next count sees it.
buyer_goods = Table(
    "buyer_goods",
    metadata,
    Column("user_id", Exact(IDENTIFIER), primary_key=True),
    Column("goods_id", Exact(IDENTIFIER), primary_key=True),
    Column("created_at", Timestamp, nullable=False),
)
