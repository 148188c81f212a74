"""The limits of the parts, each one client looping alone: a kazoo lock acquire+release cycle
(with kazoo's own handler, and with the polling handler the stock service uses), a redis-py
lock cycle, an etcd lock cycle (the stock service's own etcd backend: lock and unlock through
the JSON gateway, the lease reused), and a hot-row UPDATE + COMMIT on the stock database."""

from __future__ import annotations

import logging
import statistics
import time
import uuid
from collections.abc import Callable

import redis
from kazoo.client import KazooClient
from sqlalchemy import text

from coordination.locks.kazoo_handler import PollingHandler
from inventory.bench.measures import Measure
from shared.database.engines import make_engine


def rate(fn: Callable[[], object], seconds: float) -> float:
    """Sequential calls of fn for about `seconds`; calls per second."""
    count, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        fn()
        count += 1
    return count / (time.perf_counter() - started)


def median_rate(name: str, fn: Callable[[], object], seconds: float, rounds: int = 3) -> Measure:
    fn()  # connections, paths
    per_round = [rate(fn, seconds / rounds) for _ in range(rounds)]
    return Measure(name, statistics.median(per_round), [round(r, 1) for r in per_round])


def quiet_kazoo() -> None:
    """kazoo logs a warning when a connection drops, as every one of the bench's does when its
    ZooKeeper is stopped at the end; the bench's own output is the report."""
    logging.getLogger("kazoo").setLevel(logging.ERROR)


def warm_up_zookeeper(zk_hosts: str, seconds: float) -> None:
    """ZooKeeper's JVM compiles its hot paths in the first seconds: measured here, a lock cycle
    cost the server 2.8 ms of CPU in the first 3 s and 1.4 ms from the seventh on. Measuring a
    cold server would charge that compilation to whatever ran first."""
    quiet_kazoo()
    zk = KazooClient(hosts=zk_hosts, handler=PollingHandler())
    zk.start(timeout=10)
    try:
        lock = zk.Lock(f"/bench/warm-up/{uuid.uuid4().hex[:8]}")
        rate(lambda: (lock.acquire(), lock.release()), seconds)
    finally:
        zk.stop()
        zk.close()


def kazoo_cycle(zk_hosts: str, seconds: float, polling: bool) -> Measure:
    zk = (
        KazooClient(hosts=zk_hosts, handler=PollingHandler())
        if polling
        else KazooClient(hosts=zk_hosts)
    )
    zk.start(timeout=10)
    try:
        lock = zk.Lock(f"/bench/limits/{uuid.uuid4().hex[:8]}")
        name = "kazoo lock cycle" + (" (polling handler)" if polling else "")
        return median_rate(name, lambda: (lock.acquire(), lock.release()), seconds)
    finally:
        zk.stop()
        zk.close()


def redis_cycle(redis_url: str, seconds: float) -> Measure:
    client = redis.Redis.from_url(redis_url)
    try:
        lock = client.lock(f"bench:limits:{uuid.uuid4().hex[:8]}", timeout=10)
        return median_rate("redis-py lock cycle", lambda: (lock.acquire(), lock.release()), seconds)
    finally:
        client.close()


def etcd_cycle(endpoints: str, seconds: float) -> Measure:
    from coordination.locks.etcd import EtcdLocks

    locks = EtcdLocks(endpoints.split(","), prefix=f"bench/{uuid.uuid4().hex[:8]}/")
    name = uuid.uuid4().hex[:8]

    def cycle() -> None:
        with locks.hold([name], timeout=10):
            pass

    try:
        return median_rate("etcd lock cycle (JSON gateway)", cycle, seconds)
    finally:
        locks.close()


def hot_row(stock_db: str, seconds: float) -> Measure:
    engine = make_engine(stock_db)
    goods = f"bench-hot-{uuid.uuid4().hex[:6]}"
    try:
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO stock (goods_id, num, seeded_num, seed_version, fence, "
                    "updated_at) VALUES (:g, 0, 0, 1, 0, CURRENT_TIMESTAMP)"
                ),
                {"g": goods},
            )
        statement = text("UPDATE stock SET num = num + 1 WHERE goods_id = :g")

        def update_and_commit() -> None:
            with engine.begin() as conn:
                conn.execute(statement, {"g": goods})

        return median_rate("hot-row update+commit", update_and_commit, seconds)
    finally:
        engine.dispose()


def measure_limits(
    zk_hosts: str, redis_url: str, stock_db: str, seconds: float, etcd: str | None = None
) -> list[Measure]:
    return [
        kazoo_cycle(zk_hosts, seconds, polling=False),
        kazoo_cycle(zk_hosts, seconds, polling=True),
        redis_cycle(redis_url, seconds),
        *([etcd_cycle(etcd, seconds)] if etcd else []),
        hot_row(stock_db, seconds),
    ]
