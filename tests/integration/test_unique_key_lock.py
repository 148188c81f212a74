"""The unique-key lock (seed 000) against real databases: what its expiry fixes (a dead
holder's row), what the expiry costs (a slow holder overlaps with the next one) and why the
fence is still needed. The backend suite in test_locks.py covers exclusion and tokens."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from coordination.locks import LockLost, LockTimeout, LockUnavailable
from coordination.locks.tables import lock_keys
from coordination.locks.unique_key import UniqueKeyLocks
from shared.database.engines import make_engine
from tests.conftest import unique


@pytest.fixture
def engine(database_url: str) -> Iterator[sa.Engine]:
    """SQLite, PostgreSQL and MySQL in turn (conftest's database_url)."""
    engine = make_engine(database_url)
    yield engine
    engine.dispose()


def rows(engine: sa.Engine, name: str) -> list[sa.Row]:
    with engine.connect() as conn:
        return list(conn.execute(sa.select(lock_keys).where(lock_keys.c.name == name)))


def test_the_lock_is_a_row_that_exists_while_held(engine: sa.Engine) -> None:
    locks = UniqueKeyLocks(engine, ttl=5)
    name = unique("lock")
    with locks.hold([name], timeout=5) as lease:
        held = rows(engine, name)
        assert [row.id for row in held] == [lease.tokens[name]]
        assert held[0].expires_at > time.time()
    assert rows(engine, name) == []


def test_a_dead_holders_row_blocks_others_until_it_expires_then_a_waiter_cleans_it(
    engine: sa.Engine,
) -> None:
    # 4 s: the refused attempt below must fall well inside the dead row's life, even on a
    # loaded machine (with 1.5 s it did not, once, under pytest-xdist).
    ttl = 4.0
    dead = UniqueKeyLocks(engine, ttl=ttl)
    name = unique("lock")
    taken = time.time()  # the lock's clock: the row, written after this, expires ttl later
    claim = dead.new_claim([name])
    claim.wait(time.monotonic() + 5)  # taken, and never released: the holder "crashed"
    dead_token = claim.tokens[name]
    other = UniqueKeyLocks(engine, ttl=5)
    with pytest.raises(LockTimeout), other.hold([name], timeout=0.5):
        pass
    with other.hold([name], timeout=30) as lease:  # freed in the end: a waiter cleaned the row
        freed = time.time()
        assert lease.tokens[name] > dead_token  # type: ignore[operator]
    assert freed - taken >= ttl  # freed by the expiry, not before


def test_a_holder_past_its_expiry_knows_it_and_its_successor_gets_a_higher_token(
    engine: sa.Engine,
) -> None:
    slow = UniqueKeyLocks(engine, ttl=0.5)
    name = unique("lock")
    with slow.hold([name], timeout=5) as stale:
        stale.check()
        time.sleep(0.7)  # a pause past the expiry
        with pytest.raises(LockLost):
            stale.check()
        # the next holder cleans the expired row and holds the name at the same time
        with UniqueKeyLocks(engine, ttl=5).hold([name], timeout=5) as fresh:
            assert fresh.tokens[name] > stale.tokens[name]  # type: ignore[operator]
            fresh.check()
    # the stale holder's release deleted only its own row (by id), not the successor's
    assert rows(engine, name) == []


def test_the_database_down_is_reported_as_unavailable() -> None:
    engine = make_engine("postgresql+psycopg://postgres@127.0.0.1:1/nothing")
    locks = UniqueKeyLocks(engine)
    with pytest.raises(LockUnavailable, match="database"), locks.hold([unique("l")], timeout=1):
        pass
