"""The tables of the database lock backends, in the stock database (migrations stock_0002 and
stock_0003; their names compare exactly on MySQL and MariaDB too since stock_0011, so goods ids
`A` and `a` are two locks there as everywhere)."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Double, Integer, MetaData, Table

from shared.database.columns import Exact

metadata = MetaData()

# LOCK_BACKEND=database: one row per name, locked by the holder's open transaction.
lock_rows = Table(
    "lock_rows",
    metadata,
    Column("name", Exact(80), primary_key=True),
    Column("token", BigInteger, nullable=False),
)

# LOCK_BACKEND=unique-key: a row exists while its name is held (the unique index on `name` is
# the lock). `id` only grows, so it is the fencing token; SQLite needs AUTOINCREMENT for that,
# or it would hand a deleted row's id out again.
lock_keys = Table(
    "lock_keys",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True),
    Column("name", Exact(80), nullable=False, unique=True),
    Column("holder", Exact(80), nullable=False),
    Column("expires_at", Double, nullable=False),  # seconds since the epoch, holder's clock
    sqlite_autoincrement=True,
)
