"""SQLAlchemy engines and transactions, the same on SQLite, PostgreSQL and MySQL/MariaDB."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, Engine, create_engine, event
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import DBAPIError, OperationalError

from shared.errors import DependencyUnavailable

log = logging.getLogger(__name__)


class DatabaseUnavailable(DependencyUnavailable):
    """The database could not be reached; the request ends in a 503 naming it."""

    dependency = "database"

    def answer(self) -> str:
        return f"{self} unavailable"


class DatabaseTimeout(DatabaseUnavailable):
    """A statement cancelled by the database: it waited for a row lock past the lock timeout,
    or ran past the statement timeout (DatabaseTimeouts). Its transaction was rolled back, so
    nothing of it was written; trying again later is safe. A 503 like DatabaseUnavailable,
    saying which timeout it was."""

    def __init__(self, name: str, kind: str) -> None:
        super().__init__(name)
        self.kind = kind  # "lock_timeout" or "statement_timeout"

    def answer(self) -> str:
        return f"{self} busy: a statement was cancelled by its {self.kind.replace('_', ' ')}"


@dataclass(frozen=True)
class DatabaseTimeouts:
    """How long one statement may run, and wait for a row lock, on PostgreSQL and MariaDB
    (DB_STATEMENT_TIMEOUT_MS, DB_LOCK_TIMEOUT_MS; SQLite has its busy timeout instead).
    Without them a row locked by a paused process (a worker stopped in its transaction) held
    every statement that wanted it for as long as the pause lasted: a reconciler's pass stopped
    at that row for good. With them the statement fails (DatabaseTimeout), its transaction is
    rolled back, and the caller answers 503 or, in a pass, skips that item.

    The defaults are far above any normal wait (docs/configuration.md says why): the longest
    planned one is LOCK_BACKEND=database's wait for its lock row, which sets its own lock
    timeout (LOCK_TIMEOUT) and must stay under the statement timeout (settings_checks)."""

    statement_ms: int = 30_000
    lock_ms: int = 5_000

    @classmethod
    def of(cls, settings: Any) -> DatabaseTimeouts:
        """From a shared.config.settings.Settings (named loosely: settings imports nothing of
        this)."""
        return cls(settings.db_statement_timeout_ms, settings.db_lock_timeout_ms)


# libpq's TCP keepalives, probed after 2 s of silence. A query in flight when the load
# balancer it went through dies (a host's death: no FIN, no RST) waits for an answer that never
# comes, and sends nothing that the balancer taking the address over could refuse; with the
# system's keepalive (2 h) its worker thread would wait that long. The first probe
# after the address moved is answered with a reset (the survivor has no such connection), so
# the query fails within about 2-3 s and the request's own retry or 503 follows. A live
# balancer answers the probes, so a long query is never cut by them.
TCP_KEEPALIVES = {
    "keepalives": 1,
    "keepalives_idle": 2,
    "keepalives_interval": 1,
    "keepalives_count": 3,
}


def make_engine(
    url: str,
    application: str | None = None,
    timeouts: DatabaseTimeouts | None = None,
    **kwargs: Any,
) -> Engine:
    """An engine tuned for several threads and processes writing the same rows.

    `application`: on PostgreSQL, each connection's application_name is `<application> pid
    <pid>`, so pg_stat_activity says which process holds a connection, a transaction or a
    row lock, even through a load balancer (the client address is then the balancer's).

    `timeouts`: every connection's statement and lock timeouts on PostgreSQL and MariaDB. A
    program of the product names itself (`application`) and runs under its settings' (or,
    not given, the defaults); an engine of the tooling (no name: a check reading whole
    tables, an operator's query) runs without, unless given them. Alembic's migrations make
    engines of their own and never run under them."""
    parsed = make_url(url)
    if timeouts is None and application is not None:
        timeouts = DatabaseTimeouts()
    if parsed.get_backend_name() == "sqlite":
        connect_args = {"timeout": 30, "check_same_thread": False}
        engine = create_engine(url, connect_args=connect_args, **kwargs)
        _make_sqlite_transactions_immediate(engine)
        _WRITE_GATES[engine] = threading.RLock()
        return engine
    kwargs.setdefault("pool_pre_ping", True)
    kwargs.setdefault("pool_size", 10)
    kwargs.setdefault("max_overflow", 20)
    if parsed.get_backend_name() == "mysql":
        kwargs.setdefault("connect_args", {"connect_timeout": 5})
        # READ COMMITTED, as on PostgreSQL: every statement sees the latest committed rows,
        # so the read inside the lock sees what the previous holder wrote.
        kwargs.setdefault("isolation_level", "READ COMMITTED")
        engine = create_engine(url, **kwargs)
        if timeouts is not None:
            _time_mysql_sessions(engine, timeouts)
        return engine
    if parsed.get_backend_name() == "postgresql":
        kwargs.setdefault("connect_args", {"connect_timeout": 5, **TCP_KEEPALIVES})
        if timeouts is not None:  # connect parameters: no extra round trip
            options = f"-c statement_timeout={timeouts.statement_ms}"
            options += f" -c lock_timeout={timeouts.lock_ms}"
            kwargs["connect_args"] = {**kwargs["connect_args"], "options": options}
        engine = create_engine(url, **kwargs)
        if application:
            _name_connections(engine, application)
        return engine
    return create_engine(url, **kwargs)


def _time_mysql_sessions(engine: Engine, timeouts: DatabaseTimeouts) -> None:
    """Each new connection's session timeouts, one round trip when it connects. MariaDB's
    max_statement_time (seconds) covers every statement; MySQL's max_execution_time (ms) only
    SELECTs. innodb_lock_wait_timeout counts whole seconds, at least one."""
    lock_seconds = max(1, -(-timeouts.lock_ms // 1000))

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        mariadb = "mariadb" in str(dbapi_connection.get_server_info()).lower()
        statement = (
            f"max_statement_time = {timeouts.statement_ms / 1000:g}"
            if mariadb
            else f"max_execution_time = {timeouts.statement_ms}"
        )
        cursor = dbapi_connection.cursor()
        cursor.execute(f"SET SESSION {statement}, innodb_lock_wait_timeout = {lock_seconds}")
        cursor.close()


def _name_connections(engine: Engine, application: str) -> None:
    # At connect time, not at engine creation: gunicorn's workers are forked, and the pid
    # must be the worker's. A connect parameter, so it costs no extra round trip.
    @event.listens_for(engine, "do_connect")
    def _on_connect(_dialect: Any, _record: Any, _args: Any, params: dict[str, Any]) -> None:
        params["application_name"] = f"{application} pid {os.getpid()}"


def _make_sqlite_transactions_immediate(engine: Engine) -> None:
    """SQLAlchemy's documented recipe for SQLite: a writing transaction starts with BEGIN
    IMMEDIATE, taking the write lock at once, so two deductions never both read and then fail
    to upgrade to writers (SQLITE_BUSY is not retried by the busy timeout in that case).
    Read-only transactions (see read_only) start with a plain BEGIN: in WAL mode they neither
    wait for nor block the writer. Measured: IMMEDIATE on reads too cost a third of the stock
    service's time in SQLite's sleep-and-retry busy handler under load.

    synchronous=NORMAL is WAL's recommended setting: a commit survives a crash of the process;
    a power loss may lose the last commits but never corrupts the file."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        read_only = conn.get_execution_options().get(READ_ONLY, False)
        conn.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")


READ_ONLY = "inventory_read_only"

# SQLite has one writer at a time, and a writer that finds the lock taken sleeps in SQLite's
# busy handler (1, 2, 5, 10 ... 100 ms steps), waking late while the lock sits idle. The
# threads of one process therefore queue for it here, on a lock that wakes the next at once;
# only the processes still meet in SQLite. Measured on genOrder over gunicorn (2 workers x 16
# threads, two write transactions per order): p99 about 480-760 ms before, see the README.
_WRITE_GATES: weakref.WeakKeyDictionary[Engine, threading.RLock] = weakref.WeakKeyDictionary()


@contextmanager
def transaction(engine: Engine, name: str, read_only: bool = False) -> Iterator[Connection]:
    """One transaction: committed when the block ends normally, rolled back otherwise.
    A connection failure becomes DatabaseUnavailable(name). `read_only` only tells SQLite it
    need not take the write lock; the other databases ignore it."""
    gate = None if read_only else _WRITE_GATES.get(engine)
    try:
        with gate or contextlib.nullcontext(), engine.connect() as conn:
            if read_only:
                conn = conn.execution_options(**{READ_ONLY: True})
            with conn.begin():
                yield conn
    except OperationalError as exc:
        if _is_connection_error(exc):
            raise DatabaseUnavailable(name) from exc
        kind = timeout_kind(exc)
        if kind is not None:
            raise DatabaseTimeout(name, kind) from exc
        raise


def timeout_kind(exc: BaseException) -> str | None:
    """ "lock_timeout" or "statement_timeout" when the database cancelled the statement for
    that reason (PostgreSQL's lock_timeout and statement_timeout; MariaDB's and MySQL's lock
    wait timeout, max_statement_time and max_execution_time), else None."""
    if not isinstance(exc, DBAPIError):
        return None
    code = getattr(exc.orig, "sqlstate", None)
    number = exc.orig.args[0] if exc.orig is not None and exc.orig.args else None
    if code == "55P03" or number == 1205:
        return "lock_timeout"
    if code == "57014" and "statement timeout" in str(exc.orig):
        return "statement_timeout"
    if number in (1969, 3024):  # MariaDB max_statement_time, MySQL max_execution_time
        return "statement_timeout"
    return None


def _is_connection_error(exc: DBAPIError) -> bool:
    if exc.connection_invalidated:
        return True
    text = str(exc.orig).lower()
    return any(
        marker in text
        for marker in (
            "connection refused",
            "can't connect",
            "could not connect",
            "server closed",
            "lost connection",
            "gone away",
            "unable to open database",
            "timeout expired",
        )
    )


# A point in time, to the microsecond on every backend: MySQL's and MariaDB's DATETIME keeps
# whole seconds unless told otherwise, and a deadline shown to a buyer must be the one kept
# (a pay inside the deadline shown was refused as expired).
Timestamp = DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def utcnow() -> datetime:
    """Naive UTC, as the DateTime columns store it on every backend."""
    return datetime.now(UTC).replace(tzinfo=None)
