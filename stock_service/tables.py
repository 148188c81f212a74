"""The stock database: levels, the stock flow (one row per deducted line) and the decision of
every flag that was decided (deducted, refused, voided, returned)."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    UniqueConstraint,
)

metadata = MetaData()

stock = Table(
    "stock",
    metadata,
    Column("goods_id", String(64), primary_key=True),
    Column("num", BigInteger, nullable=False),
    # The level set by the last PUT /stock and a counter of those sets: the checker compares
    # seeded_num - num with the flows recorded under the same seed_version.
    Column("seeded_num", BigInteger, nullable=False),
    Column("seed_version", Integer, nullable=False),
    # The fencing token of the latest lock holder that registered on this row.
    Column("fence", BigInteger, nullable=False, server_default="0"),
    Column("updated_at", DateTime, nullable=False),
)

stock_flow = Table(
    "stock_flow",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("flag", String(64), nullable=False),
    Column("goods_id", String(64), nullable=False),
    Column("num", Integer, nullable=False),
    Column("seed_version", Integer, nullable=False),
    Column("fence", BigInteger, nullable=True),
    Column("created_at", DateTime, nullable=False),
    # The final authority against a double deduction: one flow per (flag, goods id).
    UniqueConstraint("flag", "goods_id", name="uq_stock_flow_flag_goods"),
    Index("ix_stock_flow_goods_id", "goods_id"),
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
    Column("flag", String(64), primary_key=True),
    Column("outcome", String(16), nullable=False),
    Column("reason", String(200), nullable=True),  # why voided or refused
    Column("created_at", DateTime, nullable=False),
)

# The stock returned by a cancel, append-only: one row per line of the deduction it undoes (the
# flow row of the same flag and goods id), with the same quantity. Unique per (flag, goods id):
# nothing is returned twice, whatever the callers do.
stock_return = Table(
    "stock_return",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("flag", String(64), nullable=False),
    Column("goods_id", String(64), nullable=False),
    Column("num", Integer, nullable=False),
    Column("seed_version", Integer, nullable=False),
    Column("fence", BigInteger, nullable=True),
    Column("created_at", DateTime, nullable=False),
    UniqueConstraint("flag", "goods_id", name="uq_stock_return_flag_goods"),
    Index("ix_stock_return_goods_id", "goods_id"),
)
