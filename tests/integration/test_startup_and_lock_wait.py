"""The schema policy at start-up, a lock wait that ends in a clear 503, and one that outlasts a
ZooKeeper reconnection."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import redis as redis_lib
import sqlalchemy as sa
from alembic.script import ScriptDirectory

import migrations
import stock_service
from coordination.locks import tables as lock_tables
from coordination.locks.zookeeper import ZooKeeperLocks
from inventory.local.client import lock_call_timeout
from inventory.local.servers import ServerProcess, start_zookeeper, wait_until
from shared.config.settings import Settings
from shared.database.startup import SchemaOutOfDate
from stock_service.storage import tables as stock_tables
from tests.conftest import make_settings, unique
from tests.fresh_database import backend_of, fresh_database
from tests.helpers import held_by_another_thread, running_services


@pytest.fixture
def empty(database_url: str, tmp_path: Path) -> Iterator[str]:
    """A database of the test's own, with no table, on the session database's backend: the
    schema's reading and its migration at start-up are each backend's own DDL and catalog."""
    yield from fresh_database(backend_of(database_url), tmp_path)


def test_a_service_refuses_to_start_on_an_unmigrated_database(
    empty: str, zk_server: ServerProcess, redis_server: ServerProcess
) -> None:
    with pytest.raises(SchemaOutOfDate, match="inventory migrate"):
        stock_service.create_app(make_settings(empty, zk_server, redis_server))


def test_migrate_on_start_brings_the_database_to_head(
    empty: str, zk_server: ServerProcess, redis_server: ServerProcess
) -> None:
    settings = make_settings(empty, zk_server, redis_server, migrate_on_start=True)
    app = stock_service.create_app(settings)
    try:
        assert app.test_client().get("/stock/anything").status_code == 404  # served, not a 500
    finally:
        app.extensions["stock"].close()
    # At head, not part of the way: the stock history's version table holds its head revision,
    # and every table the service's code uses (its own and the database lock's) exists.
    engine = sa.create_engine(empty)
    try:
        with engine.connect() as conn:
            version_table = sa.table(migrations.version_table("stock"), sa.column("version_num"))
            revisions = conn.execute(sa.select(version_table.c.version_num)).scalars().all()
        tables = set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()
    script = ScriptDirectory.from_config(migrations.alembic_config(empty, "stock"))
    assert set(revisions) == set(script.get_heads())
    expected = set(stock_tables.metadata.tables) | set(lock_tables.metadata.tables)
    assert expected <= tables, expected - tables


def test_a_lock_held_too_long_ends_in_a_503_and_keeps_the_flag(settings: Settings) -> None:
    with running_services(settings.with_(lock_timeout=0.5)) as s:
        goods, flag = unique(), unique("flag")
        s.seed(goods, 5)
        other = ZooKeeperLocks(settings.zk_hosts, settings.lock_root)  # another process
        try:
            with held_by_another_thread(other, [goods]):
                flags = redis_lib.Redis.from_url(settings.redis_url)
                flags.set(flag, "orderId", ex=60)
                answer = s.stock.put(
                    f"/reduceStock/{flag}", json=[{"goodsId": goods, "goodsNum": 1}]
                )
                assert answer.status_code == 503
                assert answer.json["dependency"] == "lock"
                assert "timed out" in answer.json["error"]
                assert flags.exists(flag) == 1  # still there: a retry is served, not a duplicate
                assert s.level(goods) == 5
        finally:
            other.close()


def test_a_deduction_that_arrives_while_zookeeper_reconnects_waits_for_it(
    database_url: str, redis_server: ServerProcess, tmp_path: Path
) -> None:
    """A ZooKeeper leader election (here: the server paused, so the connection is suspended)
    must not fail the deductions that arrive meanwhile at the batch's patience (0.1 s): they
    wait for the connection within their own LOCK_TIMEOUT. Failing them at once voided their
    orders in the chaos run's kill-zk-leader window."""
    zk = start_zookeeper(tmp_path / "zk", fsync=False)
    settings = make_settings(
        database_url, zk, redis_server, zk_session_timeout=6.0, lock_timeout=10.0
    )
    try:
        with running_services(settings) as s:
            deps = s.stock_app.extensions["stock"]
            goods, flag = unique(), unique("flag")
            s.seed(goods, 5)  # connects the stock service's ZooKeeper client
            redis_lib.Redis.from_url(settings.redis_url).set(flag, "orderId", ex=60)
            zk.pause()
            try:
                wait_until(lambda: not deps.locks.connected.is_set(), 15, "the suspension")
                with ThreadPoolExecutor(1) as pool:
                    answer = pool.submit(
                        lambda: s.stock_app.test_client().put(
                            f"/reduceStock/{flag}", json=[{"goodsId": goods, "goodsNum": 1}]
                        )
                    )
                    time.sleep(1.0)  # it waits, rather than answering 503 at once
                    assert not answer.done()
                    zk.resume()
                    # Within its lock's wait, which began before the resume.
                    response = answer.result(lock_call_timeout(settings))
            finally:
                zk.resume()
            assert (response.status_code, response.json["outcome"]) == (200, "deducted")
            assert s.level(goods) == 4
    finally:
        zk.stop()
