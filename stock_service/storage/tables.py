"""The stock database: levels, and the ledger of every change of a level (the stock flow: one
row per deducted line; the returns; the adjustments), the decision of every flag that was
decided (deducted, refused, voided, returned), and the outbox of stock events.

The ledger: each goods id's entries are numbered by `seq` (1, 2, 3 ...; the stock row keeps the
last one), each with the level it left (`level_after`), written in the same commit as the level
itself, under the goods id's lock and fence. Nothing is overwritten: for every goods id and for
all time, the sum of its adjustments - its level = its flows - its returns."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    UniqueConstraint,
)

from shared.database.columns import IDENTIFIER, NEW_ID, REFERENCE, Exact, joined_text
from shared.database.engines import Timestamp

# An id numbered by the database, in commit order per goods id (SQLite's rowid must be INTEGER).
Serial = BigInteger().with_variant(Integer(), "sqlite")

metadata = MetaData()

stock = Table(
    "stock",
    metadata,
    Column("goods_id", Exact(IDENTIFIER), primary_key=True),
    Column("num", BigInteger, nullable=False),
    # The level set by the last PUT /stock and a counter of those sets: the checker compares
    # seeded_num - num with the flows recorded under the same seed_version.
    Column("seeded_num", BigInteger, nullable=False),
    Column("seed_version", Integer, nullable=False),
    # The fencing token of the latest lock holder that registered on this row.
    Column("fence", BigInteger, nullable=False, server_default="0"),
    Column("updated_at", Timestamp, nullable=False),
    # The ledger's last entry of this goods id (its seq), written with the level.
    Column("ledger_seq", BigInteger, nullable=False, server_default="0"),
    # Units deducted for holds not paid yet (genOrder's payWithinSeconds): moved relatively
    # (held + n), so a hold's release needs no lock.
    Column("held", BigInteger, nullable=False, server_default="0"),
    # The low-stock threshold: a level falling below it is an event (low_stock). None: none.
    Column("low_stock", BigInteger, nullable=True),
    # Units it may owe at once (fill=backorder), and the units it owes now: moved relatively,
    # in the commit of the fenced write (docs/backorders.md).
    Column("backorder_limit", BigInteger, nullable=False, server_default="0"),
    Column("owed", BigInteger, nullable=False, server_default="0"),
)

stock_flow = Table(
    "stock_flow",
    metadata,
    Column("id", Exact(NEW_ID), primary_key=True),
    Column("flag", Exact(IDENTIFIER), nullable=False),
    Column("goods_id", Exact(IDENTIFIER), nullable=False),
    Column("num", Integer, nullable=False),
    Column("seed_version", Integer, nullable=False),
    Column("fence", BigInteger, nullable=True),
    Column("created_at", Timestamp, nullable=False),
    Column("seq", BigInteger, nullable=True),  # its ledger entry (none before the ledger)
    Column("level_after", BigInteger, nullable=True),
    # The final authority against a double deduction: one flow per (flag, goods id).
    UniqueConstraint("flag", "goods_id", name="uq_stock_flow_flag_goods"),
    Index("ix_stock_flow_goods_id", "goods_id"),
    Index("uq_stock_flow_goods_seq", "goods_id", "seq", unique=True),  # one seq per line
)

# One row per decided flag: the stock database's word on what became of an operation
# (shared/contract.py's Decided).
# - deducted: its flow rows were written in the same transaction;
# - refused: not enough stock when it was decided; nothing was deducted, and no attempt of it
#   will ever deduct (the buyer was told no: stock that comes back must not sell to them);
# - voided: nothing was deducted and nothing ever will be (the order service or the reconciler
#   settled an order whose outcome was unknown; a cancel that found no deduction: Seata's
#   "empty rollback", whose record refuses a deduction that arrives later, its "suspension");
# - returned: it was deducted, and its stock came back (its return rows were written in the
#   same transaction); nothing will be deducted for it again.
# The primary key makes one flag one operation whatever its body: a second deduction of a flag,
# even with other lines, fails here. A flag with no row is undecided.
flag_decision = Table(
    "flag_decision",
    metadata,
    Column("flag", Exact(IDENTIFIER), primary_key=True),
    Column("outcome", String(16), nullable=False),
    Column("reason", String(200), nullable=True),  # why voided or refused
    Column("created_at", Timestamp, nullable=False),
    # A hold's deduction (genOrder's payWithinSeconds), its units held until the order service
    # says it was paid (PUT /holds/{flag}/release) or its stock comes back.
    Column("held", Boolean, nullable=False, server_default="0"),
)

# The stock returned by a cancel, append-only: one row per line of the deduction it undoes (the
# flow row of the same flag and goods id), with the same quantity. Unique per (flag, goods id):
# nothing is returned twice, whatever the callers do.
stock_return = Table(
    "stock_return",
    metadata,
    Column("id", Exact(NEW_ID), primary_key=True),
    Column("flag", Exact(IDENTIFIER), nullable=False),
    Column("goods_id", Exact(IDENTIFIER), nullable=False),
    Column("num", Integer, nullable=False),
    Column("seed_version", Integer, nullable=False),
    Column("fence", BigInteger, nullable=True),
    Column("created_at", Timestamp, nullable=False),
    Column("seq", BigInteger, nullable=True),
    Column("level_after", BigInteger, nullable=True),
    UniqueConstraint("flag", "goods_id", name="uq_stock_return_flag_goods"),
    Index("ix_stock_return_goods_id", "goods_id"),
    Index("uq_stock_return_goods_seq", "goods_id", "seq", unique=True),  # one seq per line
)

# A change of a level that is not an order's: a restock, a loss, a correction, a count, or a
# level set outright (the admin seed). `delta` is what it changed; an absolute set records the
# level it expected to find (a compare-and-swap: refused when stale) or none.
stock_adjustment = Table(
    "stock_adjustment",
    metadata,
    Column("id", Exact(NEW_ID), primary_key=True),
    Column("goods_id", Exact(IDENTIFIER), nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("delta", BigInteger, nullable=False),
    Column("level_after", BigInteger, nullable=False),
    Column("reason", String(16), nullable=False),  # restock, damaged, correction, count, set
    Column("reference", Exact(REFERENCE), nullable=True),  # the caller's document: a delivery note
    Column("expected", BigInteger, nullable=True),
    Column("fence", BigInteger, nullable=True),
    Column("created_at", Timestamp, nullable=False),
    Column("location", Exact(IDENTIFIER), nullable=True),  # where; none: the default location
    UniqueConstraint("goods_id", "seq", name="uq_stock_adjustment_goods_seq"),
)

# The transactional outbox of stock events (Debezium's outbox pattern): one row per ledger entry
# and per threshold crossing, written in the entry's own commit; the relay
# (stock_service/ledger/relay.py) publishes the unsent ones to a Redis Stream in id order and marks
# them sent. Per goods id, ids follow the ledger (its entries are written under its lock, one
# commit after another).
stock_outbox = Table(
    "stock_outbox",
    metadata,
    Column("id", Serial, primary_key=True, autoincrement=True),
    Column("goods_id", Exact(IDENTIFIER), nullable=False),
    Column("seq", BigInteger, nullable=False),  # the ledger entry it tells of
    Column("kind", String(16), nullable=False),  # deducted, returned, adjusted, low_stock ...
    Column("delta", BigInteger, nullable=False),
    Column("level", BigInteger, nullable=False),  # the level after the entry
    Column("flag", Exact(IDENTIFIER), nullable=True),
    Column("reason", String(200), nullable=True),
    Column("created_at", Timestamp, nullable=False),
    Column("sent_at", Timestamp, nullable=True),
    # Where the entry moved units: a location, or a split line's parts ("north:3,south:2").
    Column("location", joined_text(), nullable=True),
    Index("ix_stock_outbox_unsent", "sent_at", "id"),
)

# --- Stock in more than one place (docs/locations.md) ------------------------------------------
# A location stock is kept in. `default` exists without a row (priority 0, active) until a PUT
# /locations/default gives it one: a stack that never names a location keeps everything there.
location = Table(
    "location",
    metadata,
    Column("location_id", Exact(IDENTIFIER), primary_key=True),
    Column("priority", Integer, nullable=False),  # lower first; ties by location id
    Column("active", Boolean, nullable=False),
    Column("updated_at", Timestamp, nullable=False),
)

# A goods id's level and held units at a NAMED location. The default location has no row: its
# level is the goods id's total (stock.num) less its named locations', so a goods id that never
# names a location writes exactly what it wrote before. Written in the commit of the stock
# row's fenced write, under the goods id's lock.
stock_location = Table(
    "stock_location",
    metadata,
    Column("goods_id", Exact(IDENTIFIER), primary_key=True),
    Column("location_id", Exact(IDENTIFIER), primary_key=True),
    Column("num", BigInteger, nullable=False),
    Column("held", BigInteger, nullable=False, server_default="0"),
)

# Where a deduction's units came from, per location, written with its flow row when the goods
# id had a named location (none: all from the default location). A return puts each part back
# where it came from.
stock_allocation = Table(
    "stock_allocation",
    metadata,
    Column("flag", Exact(IDENTIFIER), primary_key=True),
    Column("goods_id", Exact(IDENTIFIER), primary_key=True),
    Column("location_id", Exact(IDENTIFIER), primary_key=True),
    Column("num", BigInteger, nullable=False),
)

# A transfer between two locations of one goods id: its units leave `from` (the out leg) and
# are in transit until received at `to` or cancelled back to `from` (the in leg). Its id is
# made from the caller's reference, so a repeated POST finds it.
stock_transfer = Table(
    "stock_transfer",
    metadata,
    Column("transfer_id", Exact(IDENTIFIER), primary_key=True),
    Column("reference", Exact(REFERENCE), nullable=False, unique=True),
    Column("goods_id", Exact(IDENTIFIER), nullable=False),
    Column("from_location", Exact(IDENTIFIER), nullable=False),
    Column("to_location", Exact(IDENTIFIER), nullable=False),
    Column("units", BigInteger, nullable=False),
    Column("state", String(16), nullable=False),  # in_transit, received, cancelled
    Column("created_at", Timestamp, nullable=False),
    Column("updated_at", Timestamp, nullable=False),
)

# A transfer's ledger lines: `out` and `in`, each at most once (the unique key), numbered in
# the goods id's ledger with the other lines.
stock_transfer_leg = Table(
    "stock_transfer_leg",
    metadata,
    Column("transfer_id", Exact(IDENTIFIER), primary_key=True),
    Column("leg", String(8), primary_key=True),  # out, in
    Column("goods_id", Exact(IDENTIFIER), nullable=False),
    Column("location_id", Exact(IDENTIFIER), nullable=False),
    Column("delta", BigInteger, nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("level_after", BigInteger, nullable=False),
    Column("fence", BigInteger, nullable=True),
    Column("created_at", Timestamp, nullable=False),
    UniqueConstraint("goods_id", "seq", name="uq_stock_transfer_leg_goods_seq"),
)

# --- Backorders (docs/backorders.md) ----------------------------------------------------------
# A deduction's line that owes units: its place in line is the ledger seq of its `backordered`
# entry (`position`); units that arrive fill the waiting lines of its goods id oldest first.
backorder = Table(
    "backorder",
    metadata,
    Column("flag", Exact(IDENTIFIER), primary_key=True),
    Column("goods_id", Exact(IDENTIFIER), primary_key=True),
    Column("position", BigInteger, nullable=False),  # its ledger entry's seq
    Column("level_after", BigInteger, nullable=False),
    Column("wanted", BigInteger, nullable=False),  # the units owed when it started waiting
    Column("filled", BigInteger, nullable=False, server_default="0"),
    Column("state", String(16), nullable=False),  # waiting, filled, cancelled
    Column("created_at", Timestamp, nullable=False),
    Column("updated_at", Timestamp, nullable=False),
    # Cancelled: the goods id's last ledger seq when it gave up its place (it left the line
    # after that entry and before the next), so a give-up that returned nothing, and so wrote
    # no ledger line of its own, still has a place in the ledger's order.
    Column("gave_up_after", BigInteger, nullable=True),
    # The location its deduction's line named: it is handed units there only. None: anywhere.
    Column("location", Exact(IDENTIFIER), nullable=True),
    Index("ix_backorder_waiting", "goods_id", "state", "position"),
)

# A goods id's backorder limit at one location: the units its lines naming that location may
# owe at once, within the goods id's own limit (stock.backorder_limit). No row: none but that.
backorder_location_limit = Table(
    "backorder_location_limit",
    metadata,
    Column("goods_id", Exact(IDENTIFIER), primary_key=True),
    Column("location_id", Exact(IDENTIFIER), primary_key=True),
    Column("backorder_limit", BigInteger, nullable=False),
)

# Each hand-over of arriving units to a waiting line: a ledger line of the goods id (its seq and
# the level it left), where the units were taken from (`north`, or `north:3,south:2`).
backorder_fill = Table(
    "backorder_fill",
    metadata,
    Column("id", Exact(NEW_ID), primary_key=True),
    Column("flag", Exact(IDENTIFIER), nullable=False),
    Column("goods_id", Exact(IDENTIFIER), nullable=False),
    Column("num", BigInteger, nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("level_after", BigInteger, nullable=False),
    Column("location", joined_text(), nullable=False),
    Column("fence", BigInteger, nullable=True),
    Column("created_at", Timestamp, nullable=False),
    UniqueConstraint("goods_id", "seq", name="uq_backorder_fill_goods_seq"),
    Index("ix_backorder_fill_flag", "flag"),
)

# --- Webhooks (docs/webhooks.md) ---------------------------------------------------------------
# A receiver of the stock events over HTTP: where to POST, the secret the bodies are signed
# with, which kinds and goods ids it wants (empty: all), and how far the deliverer has fanned
# the outbox out to it (`fanned_to`: every outbox row up to this id has its delivery row, or did
# not match). A subscription sees the events written after it was made.
webhook_subscription = Table(
    "webhook_subscription",
    metadata,
    Column("id", Exact(NEW_ID), primary_key=True),
    Column("url", String(2048), nullable=False),
    Column("secret", String(256), nullable=False),
    Column("kinds", String(200), nullable=False),  # comma-joined; empty: every kind
    Column("goods_ids", joined_text(), nullable=False),  # comma-joined; empty: every goods id
    Column("fanned_to", BigInteger, nullable=False),
    Column("created_at", Timestamp, nullable=False),
)

# One event to one subscription: pending until a 2xx (delivered) or given up (dead). Per
# (subscription, goods id) only the lowest pending event is tried, so each goods id's events
# arrive in seq order; the others go on meanwhile.
webhook_delivery = Table(
    "webhook_delivery",
    metadata,
    Column("subscription_id", Exact(NEW_ID), primary_key=True),
    Column("event_id", BigInteger, primary_key=True, autoincrement=False),  # stock_outbox.id
    Column("goods_id", Exact(IDENTIFIER), nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("kind", String(16), nullable=False),
    Column("state", String(16), nullable=False),  # pending, delivered, dead
    Column("attempts", Integer, nullable=False),
    Column("next_attempt_at", Timestamp, nullable=False),
    Column("last_error", String(200), nullable=True),
    Column("first_tried_at", Timestamp, nullable=True),
    Column("done_at", Timestamp, nullable=True),  # delivered or dead
    Index("ix_webhook_delivery_line", "state", "subscription_id", "goods_id", "event_id"),
    Index("ix_webhook_delivery_due", "state", "next_attempt_at"),
)
