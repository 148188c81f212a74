"""The stock database: levels and the stock flow (one row per deducted line)."""

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
