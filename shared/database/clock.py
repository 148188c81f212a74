"""One clock for every deadline: the database's.

A reservation's `expiresAt`, a hold's pay deadline and every "is it due" condition compare
times written by one host with times read by another. Each host's own clock differs from the
others' (NTP keeps them within milliseconds on a good day, seconds on a bad one): an order host
2 s ahead answered `expired` to a DELETE that another host then honoured, and a reconciler host
ahead expired reservations before the `expiresAt` the buyer was told. Every writer and every
pass therefore takes "now" from the database they all share, inside the transaction that
compares or writes it, so every comparison is made on one clock."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from sqlalchemy import text
from sqlalchemy.engine import Connection

# Naive UTC, as the DateTime columns store it (shared/database/engines.py's Timestamp), with
# microseconds. PostgreSQL's clock_timestamp() is the time of the statement, not of the
# transaction's start (now()), so a long transaction does not read a time from its past.
_NOW = {
    "postgresql": "SELECT (clock_timestamp() AT TIME ZONE 'UTC')",
    "mysql": "SELECT UTC_TIMESTAMP(6)",
    "mariadb": "SELECT UTC_TIMESTAMP(6)",
}


def database_now(conn: Connection) -> datetime:
    """The database's time now, naive UTC (one round trip on the caller's connection).

    SQLite runs in the process that asks, on its host's clock, so its time is this process's:
    read here to the microsecond, where SQLite's own 'now' is cut to the millisecond and was
    behind a row stamped a moment before in the same millisecond (a pass that has just seen
    an order written did not reach it)."""
    if conn.dialect.name == "sqlite":
        return datetime.now(UTC).replace(tzinfo=None)
    value = conn.execute(text(_NOW[conn.dialect.name])).scalar_one()
    assert isinstance(value, datetime)
    return value.replace(tzinfo=None)


# Seconds since the epoch by the database's clock, for expiries kept as numbers (the unique-key
# lock's rows). MySQL's UNIX_TIMESTAMP(NOW(6)) converts back through the session's time zone,
# so it is the epoch whatever that zone is.
_EPOCH = {
    "postgresql": "SELECT extract(epoch from clock_timestamp())",
    "mysql": "SELECT UNIX_TIMESTAMP(NOW(6))",
    "mariadb": "SELECT UNIX_TIMESTAMP(NOW(6))",
}


def database_epoch(conn: Connection) -> float:
    """The database's time now, in seconds since the epoch (SQLite's: this process's, as in
    database_now)."""
    if conn.dialect.name == "sqlite":
        return time.time()
    return float(conn.execute(text(_EPOCH[conn.dialect.name])).scalar_one())
