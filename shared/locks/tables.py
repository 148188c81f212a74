"""The table of the database lock backend, in the stock database (migration stock_0002)."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, MetaData, String, Table

metadata = MetaData()

lock_rows = Table(
    "lock_rows",
    metadata,
    Column("name", String(80), primary_key=True),
    Column("token", BigInteger, nullable=False),
)
