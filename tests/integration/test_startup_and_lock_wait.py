"""The schema policy at start-up, and a lock wait that ends in a clear 503."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis as redis_lib

import stock_service
from shared.locks.zookeeper import ZooKeeperLocks
from shared.settings import Settings
from shared.startup import SchemaOutOfDate
from tests.conftest import unique
from tests.helpers import held_by_another_thread, running_services


def test_a_service_refuses_to_start_on_an_unmigrated_database(
    tmp_path: Path, settings: Settings
) -> None:
    empty = f"sqlite:///{tmp_path / 'empty.db'}"
    with pytest.raises(SchemaOutOfDate, match="inventory migrate"):
        stock_service.create_app(settings.with_(stock_database_url=empty))


def test_migrate_on_start_brings_the_database_to_head(tmp_path: Path, settings: Settings) -> None:
    empty = f"sqlite:///{tmp_path / 'empty.db'}"
    app = stock_service.create_app(settings.with_(stock_database_url=empty, migrate_on_start=True))
    try:
        assert app.test_client().get("/stock/anything").status_code == 404  # tables exist
    finally:
        app.extensions["stock"].close()


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
