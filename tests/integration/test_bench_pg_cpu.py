"""The bench counts PostgreSQL's CPU by its own database's backends (inventory/bench/pg_cpu.py):
on the real server, work of a connection of the bench's database is counted under its
application, a backend born during the load included; work of another database is not."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from inventory.bench.pg_cpu import DatabaseCpu, group
from tests.conftest import PG_ADMIN_URL

BURN = sa.text("SELECT count(*) FROM generate_series(1, 3000000)")


@pytest.fixture
def own_database() -> Iterator[str]:
    name = f"inv_test_cpu_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE {name}"))
    try:
        yield admin.url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()


def _burn(url: str, application: str) -> None:
    engine = sa.create_engine(url, connect_args={"application_name": application})
    try:
        with engine.connect() as conn:
            conn.execute(BURN)
    finally:
        engine.dispose()


def test_only_the_backends_of_its_own_database_are_counted(own_database: str) -> None:
    sampler, how = DatabaseCpu.of(own_database)
    assert sampler is not None, how
    try:
        sampler.start()
        _burn(own_database, "peer pid 1")  # a backend born during the load, then gone
        _burn(PG_ADMIN_URL, "peer pid 2")  # another database's: not the bench's
        counted = sampler.stop()
    finally:
        sampler.close()
    assert set(counted) <= {"postgres peer"}
    # One burn is some tens of ms of CPU; two (the other database's too) would be about twice.
    alone = _measure_one_burn(own_database)
    assert 0.5 * alone <= counted.get("postgres peer", 0.0) <= 1.6 * alone + 0.02


def _measure_one_burn(url: str) -> float:
    sampler, _ = DatabaseCpu.of(url)
    assert sampler is not None
    engine = sa.create_engine(url, connect_args={"application_name": "peer pid 3"})
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
            sampler.start()  # this backend lived before the load: counted from its start value
            conn.execute(BURN)
            counted = sampler.stop()
    finally:
        engine.dispose()
        sampler.close()
    assert counted["postgres peer"] > 0.01
    return counted["postgres peer"]


def test_backends_are_grouped_by_the_application_before_pid() -> None:
    assert group("order pid 123") == "postgres order"
    assert group("stock pid 9") == "postgres stock"
    assert group("") == "postgres other"
