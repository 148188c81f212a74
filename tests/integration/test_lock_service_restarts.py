"""What the lock services forget or keep across their own lives: a Redis restarted empty must
not make every fenced stock row refuse every holder, and ZooKeeper must not keep a lock parent
for every goods id ever sold. Each test has servers of its own, since it restarts them."""

from __future__ import annotations

from pathlib import Path

import redis as redis_lib
from kazoo.client import KazooClient

from coordination.locks.redis import RedisLocks
from coordination.locks.zookeeper import ZooKeeperLocks
from inventory.local.servers import start_redis, start_zookeeper, wait_until
from tests.conftest import make_settings, unique
from tests.helpers import running_services


def test_redis_lock_tokens_keep_growing_across_a_redis_restarted_empty(tmp_path: Path) -> None:
    """Fault 4: LOCK_BACKEND=redis drew its tokens from INCR on a Redis that keeps nothing; a
    restart started them again from 1, below every fence a stock row holds."""
    server = start_redis(tmp_path / "r1")
    try:
        locks = RedisLocks(redis_lib.Redis.from_url(f"redis://{server.address}/0"), ttl=5)
        with locks.hold(["g"], timeout=5) as lease:
            before = lease.tokens["g"]
        server.stop()
        server = start_redis(tmp_path / "r2", port=server.port)  # empty: the counter is gone
        with locks.hold(["g"], timeout=5) as lease:
            after = lease.tokens["g"]
        assert before is not None and after is not None and after > before
        locks.close()
    finally:
        server.stop()


def test_a_deduction_after_redis_restarted_empty_is_not_refused_by_the_fence(
    tmp_path: Path, database_url: str, zk_server: object
) -> None:
    server = start_redis(tmp_path / "r1")
    try:
        settings = make_settings(database_url, zk_server, server, lock_backend="redis")  # type: ignore[arg-type]
        with running_services(settings) as s:
            goods = unique()
            s.seed(goods, 5)
            first = s.order.post("/genOrder", json={"userId": unique("u"), "goodsIds": [goods]})
            assert first.status_code == 200, first.json
            server.stop()
            server = start_redis(tmp_path / "r2", port=server.port)
            # redis-py's pooled connections died with the server: the first use fails once.
            wait_until(lambda: _pings(settings.redis_url), 10, "redis back")
            second = s.order.post("/genOrder", json={"userId": unique("u"), "goodsIds": [goods]})
            assert second.status_code == 200, second.json
            assert s.level(goods) == 3
    finally:
        server.stop()


def _pings(url: str) -> bool:
    try:
        return bool(redis_lib.Redis.from_url(url).ping())
    except redis_lib.RedisError:
        return False


def test_lock_parents_do_not_pile_up_in_zookeeper(tmp_path: Path) -> None:
    """Fault 7: a lock parent stayed for every goods id ever locked. They are containers now:
    once empty, the server deletes them (here every 200 ms; a minute by default)."""
    server = start_zookeeper(tmp_path / "zk", fsync=False, container_check_ms=200)
    locks = ZooKeeperLocks(server.address, "/inventory/locks", session_timeout=4)
    watcher = KazooClient(hosts=server.address)
    watcher.start()
    try:
        names = [unique() for _ in range(30)]
        for name in names[:10]:
            with locks.hold([name], timeout=5):
                pass
        with locks.hold(names[10:], timeout=5):  # several names in one transaction
            assert set(names[10:]) <= set(watcher.get_children("/inventory/locks"))
        wait_until(
            lambda: not watcher.get_children("/inventory/locks"), 15, "the empty parents to go"
        )
        # A name whose parent was removed is locked again as if nothing happened.
        with locks.hold([names[0]], timeout=5) as lease:
            assert lease.tokens[names[0]]
    finally:
        watcher.stop()
        locks.close()
        server.stop()
