"""LOCK_BACKEND=unique-key: seed 000's database lock. Inserting a row whose unique key is the
lock name takes the lock (the unique index lets one insert win); deleting it releases it.

The seed's method has two flaws, and this backend carries the seed's fixes for both:
- A holder that dies without deleting its row would hold the name forever. Each row has an
  `expires_at`; a waiter that finds the row expired deletes it (the cleaner, run exactly when
  someone needs the name) and inserts its own. A dead holder blocks others for one TTL.
- The expiry makes a slow holder (paused past `expires_at`) overlap with the next one. Its
  still-held check compares its own clock with its expiry before commit, but a pause after
  that check cannot be seen by the holder: the fencing token (the row's `id`, which only grows)
  makes the stock row's compare-and-set refuse the stale write (stock_service/storage/store.py).

Unlike LOCK_BACKEND=database, nothing stays open while the name is held: the insert commits at
once, so SQLite works too. Waiting is polling (inserts retried with a growing pause), so a hot
name costs the database one failed insert per waiter per poll. Expiry times are epoch seconds:
a holder paused past its expiry is overlapped, and the fence is what keeps its stale write
out.

One clock: every row's expiry is set and compared by the database's clock
(shared/database/clock.py), never by a holder's, so a waiter whose clock runs ahead does not clean a
row before its expiry and take a name that is still held. A holder counts its own time from just
before its insert on its monotonic clock, so it believes its hold over no later than the row
expires.
"""

from __future__ import annotations

import os
import socket
import threading
import time

from sqlalchemy import Engine, delete, insert, select
from sqlalchemy.exc import DBAPIError, IntegrityError

from coordination.locks.base import LockBackend, LockUnavailable, SequentialClaim
from coordination.locks.tables import lock_keys
from shared.database.clock import database_epoch


def holder_name() -> str:
    """Who holds a row, for people reading the table: host, process and thread."""
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident() % 100000}"


class UniqueKeyLocks(LockBackend):
    name = "unique-key"

    def __init__(
        self,
        engine: Engine,
        ttl: float = 10.0,
        poll_interval: float = 0.002,
        max_poll_interval: float = 0.05,
    ) -> None:
        self.engine = engine
        self.ttl = ttl
        self.poll_interval = poll_interval
        self.max_poll_interval = max_poll_interval

    def new_claim(self, names: list[str]) -> UniqueKeyClaim:
        return UniqueKeyClaim(self, names)

    def try_insert(self, name: str) -> tuple[int, float] | None:
        """One attempt: (the row's id, the holder's own end of it on its monotonic clock) if
        this insert took the name, else None."""
        held_until = time.monotonic() + self.ttl
        try:
            with self.engine.begin() as conn:
                expires_at = database_epoch(conn) + self.ttl
                result = conn.execute(
                    insert(lock_keys).values(name=name, holder=holder_name(), expires_at=expires_at)
                )
                row_id = result.inserted_primary_key[0] if result.inserted_primary_key else None
        except IntegrityError:
            return None
        except DBAPIError as exc:
            if _is_contention(exc):
                return None
            raise LockUnavailable("database", type(exc.orig).__name__) from exc
        assert row_id is not None
        return int(row_id), held_until

    def clean_expired(self, name: str) -> int:
        """Delete the rows of `name` past their expiry: the cleaner. Returns how many went. A
        row is only ever deleted by its holder or once expired. A plain read comes first: a
        DELETE takes locks even when it finds nothing, and waiters poll often."""
        try:
            with self.engine.begin() as conn:
                now = database_epoch(conn)
                expired = select(lock_keys.c.id).where(
                    lock_keys.c.name == name, lock_keys.c.expires_at < now
                )
                ids = list(conn.execute(expired).scalars())
                if not ids:
                    return 0
                return int(
                    conn.execute(
                        delete(lock_keys).where(
                            lock_keys.c.id.in_(ids), lock_keys.c.expires_at < now
                        )
                    ).rowcount
                )
        except DBAPIError as exc:
            if _is_contention(exc):
                return 0  # another waiter is cleaning the same row
            raise LockUnavailable("database", type(exc.orig).__name__) from exc

    def delete_row(self, row_id: int) -> None:
        """The release: delete this hold's own row (by id, so never a successor's)."""
        for _attempt in range(5):
            try:
                with self.engine.begin() as conn:
                    conn.execute(delete(lock_keys).where(lock_keys.c.id == row_id))
                return
            except DBAPIError as exc:
                if not _is_contention(exc):
                    break  # the database is down: the row expires, and a waiter cleans it up

    def healthy(self) -> bool:
        try:
            with self.engine.connect() as conn:
                conn.exec_driver_sql("SELECT 1")
            return True
        except DBAPIError:
            return False


def _is_contention(exc: DBAPIError) -> bool:
    """InnoDB reports a deadlock when inserts of one key meet the delete of its row (gap and
    duplicate-key locks): here that only means "not this time", so the waiter polls again."""
    code = getattr(exc.orig, "sqlstate", None) or ""
    return code in ("40001", "40P01") or "deadlock" in str(exc.orig).lower()


class UniqueKeyClaim(SequentialClaim):
    def __init__(self, locks: UniqueKeyLocks, names: list[str]) -> None:
        super().__init__(names)
        self.locks = locks
        # name -> (row id, the end of the hold on this holder's monotonic clock)
        self.rows: dict[str, tuple[int, float]] = {}

    def take(self, name: str, timeout: float) -> tuple[int | None, str] | None:
        deadline = time.monotonic() + timeout
        pause = self.locks.poll_interval
        while True:
            taken = self.locks.try_insert(name)
            if taken is not None:
                self.rows[name] = taken
                return taken[0], f"lock_keys[{name}] id {taken[0]}"
            if self.locks.clean_expired(name):
                continue  # a dead or too-slow holder's row went: try again at once
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            time.sleep(min(pause, left))
            pause = min(pause * 2, self.locks.max_poll_interval)

    def give_back(self, name: str) -> None:
        taken = self.rows.pop(name, None)
        if taken is not None:
            self.locks.delete_row(taken[0])

    def still_held(self) -> bool:
        now = time.monotonic()
        return all(now < held_until for _, held_until in self.rows.values())
