"""LOCK_BACKEND=database: a row lock in the stock database (`lock_rows`), held by an open
transaction on a connection of its own for as long as the lease lives.

Taking a row with `UPDATE lock_rows SET token = token + 1` both waits for the previous holder's
transaction to end and draws the fencing token, in one statement. The database releases the
lock by itself when the holder's connection dies. Tokens grow per lock name: switching
LOCK_SCOPE or backend on a live database calls for re-seeding (PUT /stock resets the fence).

SQLite is refused: it has no row locks, and the lock transaction would hold the single writer
lock that the deduction itself needs.
"""

from __future__ import annotations

import logging

from sqlalchemy import Connection, Engine, insert, select, update
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from coordination.locks.base import LockBackend, LockUnavailable, SequentialClaim
from coordination.locks.tables import lock_rows

log = logging.getLogger(__name__)


class DatabaseLocks(LockBackend):
    name = "database"

    def __init__(self, engine: Engine) -> None:
        backend = engine.url.get_backend_name()
        if backend not in ("postgresql", "mysql"):
            raise ValueError(
                f"LOCK_BACKEND=database needs PostgreSQL or MySQL/MariaDB, not {backend}"
            )
        self.engine = engine
        self.backend = backend
        self._known: set[str] = set()

    def _ensure_row(self, name: str) -> None:
        if name in self._known:
            return
        try:
            with self.engine.begin() as conn:
                if conn.execute(select(lock_rows.c.name).where(lock_rows.c.name == name)).first():
                    self._known.add(name)
                    return
                conn.execute(insert(lock_rows).values(name=name, token=0))
        except IntegrityError:
            pass  # another process created it first
        self._known.add(name)

    def new_claim(self, names: list[str]) -> DatabaseClaim:
        try:
            for name in names:
                self._ensure_row(name)
            conn = self.engine.connect()
            conn.begin()
        except OperationalError as exc:
            raise LockUnavailable("database", type(exc.orig).__name__) from exc
        return DatabaseClaim(self, conn, names)

    def set_wait_limit(self, conn: Connection, timeout: float) -> None:
        # PostgreSQL reads 0 as "wait forever": at least a millisecond. MySQL counts whole
        # seconds, at least one: a shorter wait is rounded up there.
        if self.backend == "postgresql":
            conn.exec_driver_sql(f"SET LOCAL lock_timeout = '{max(1, int(timeout * 1000))}ms'")
        else:
            conn.exec_driver_sql(f"SET SESSION innodb_lock_wait_timeout = {max(1, round(timeout))}")

    def healthy(self) -> bool:
        try:
            with self.engine.connect() as conn:
                conn.execute(select(1))
            return True
        except OperationalError:
            return False


def _is_lock_wait_timeout(exc: DBAPIError) -> bool:
    text = str(exc.orig).lower()
    return "lock timeout" in text or "lock wait timeout" in text


class DatabaseClaim(SequentialClaim):
    """The names' rows locked one by one in the claim's transaction, in sorted order. A row
    lock lasts until the transaction ends, so `release` of some names keeps them until the
    claim ends (the database has no way to unlock one row early). Each take runs in a
    savepoint, so a wait that times out leaves the rows taken before it locked."""

    def __init__(self, locks: DatabaseLocks, conn: Connection, names: list[str]) -> None:
        super().__init__(names)
        self.locks = locks
        self.conn = conn

    def take(self, name: str, timeout: float) -> tuple[int | None, str] | None:
        savepoint = self.conn.begin_nested()
        try:
            self.locks.set_wait_limit(self.conn, timeout)
            self.conn.execute(
                update(lock_rows)
                .where(lock_rows.c.name == name)
                .values(token=lock_rows.c.token + 1)
            )
            token = self.conn.execute(
                select(lock_rows.c.token).where(lock_rows.c.name == name)
            ).scalar_one()
            savepoint.commit()
        except DBAPIError as exc:
            if savepoint.is_active:
                savepoint.rollback()
            if _is_lock_wait_timeout(exc):
                return None
            raise LockUnavailable("database", type(exc.orig).__name__) from exc
        return int(token), f"lock_rows[{name}]"

    def give_back(self, name: str) -> None:
        pass  # the row stays locked until the claim's transaction ends

    def still_held(self) -> bool:
        return not self.conn.invalidated and not self.conn.closed

    def release_all(self) -> None:
        super().release_all()
        try:
            transaction = self.conn.get_transaction()
            if transaction is not None:
                transaction.commit()  # the release of every row
        except DBAPIError as exc:
            log.warning(
                "database lock release failed (%s); the rows unlock with the connection", exc
            )
        finally:
            self.conn.close()
