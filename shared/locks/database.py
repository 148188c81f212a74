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
import time
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Connection, Engine, insert, select, update
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from shared.locks.base import Lease, LockBackend, LockTimeout, LockUnavailable
from shared.locks.tables import lock_rows

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

    @contextmanager
    def hold(self, names: list[str], timeout: float) -> Iterator[Lease]:
        started = time.monotonic()
        try:
            for name in sorted(set(names)):
                self._ensure_row(name)
            conn = self.engine.connect()
        except OperationalError as exc:
            raise LockUnavailable("database", type(exc.orig).__name__) from exc
        lease = Lease(still_held=lambda: not conn.invalidated and not conn.closed)
        try:
            with conn.begin():
                self._set_wait_limit(conn, timeout)
                for name in sorted(set(names)):
                    try:
                        conn.execute(
                            update(lock_rows)
                            .where(lock_rows.c.name == name)
                            .values(token=lock_rows.c.token + 1)
                        )
                    except DBAPIError as exc:
                        if _is_lock_wait_timeout(exc):
                            waited = time.monotonic() - started
                            raise LockTimeout(
                                f"lock {name!r} not acquired within {waited:.1f}s"
                            ) from exc
                        raise LockUnavailable("database", type(exc.orig).__name__) from exc
                    lease.tokens[name] = int(
                        conn.execute(
                            select(lock_rows.c.token).where(lock_rows.c.name == name)
                        ).scalar_one()
                    )
                    lease.details[name] = f"lock_rows[{name}]"
                yield lease
                # leaving the block commits: that is the release
        finally:
            conn.close()

    def _set_wait_limit(self, conn: Connection, timeout: float) -> None:
        if self.backend == "postgresql":
            conn.exec_driver_sql(f"SET LOCAL lock_timeout = '{int(timeout * 1000)}ms'")
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
