"""A stock process's threads beside a stalled lock: one goods id's lock held by a ZooKeeper
client of its own, buyers of that goods id that keep coming (a buyer resends on its call's
timeout or a 503, as the order service's lone resends and retries do), and a buyer of a free
goods id now and then, all through a pool of 4 threads in front of the stock app: gunicorn's
gthread worker (the cluster runs 8), which takes every request and queues it for a free thread.

Before, each waiter of the stalled lock held its thread until its caller's deadline (4 s here,
the cluster's STOCK_CALL_TIMEOUT), the resends took every thread, and each free buyer's request
queued behind them: answered after up to the call timeout (the chaos fault stall-lock-holder's
other-goods buyers at 3.6-4.0 s). Now the stalled lock's waiters take at most half the threads
(stock_service.deduction's lock_queue.py), the rest refused at once (503, Retry-After, nothing
written), and
every free buyer is deducted within a second. PostgreSQL, real ZooKeeper and Redis."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import pytest
import redis as redis_lib
from flask import Flask

import stock_service
from coordination.locks.zookeeper import ZooKeeperLocks
from shared.config.settings import Settings
from shared.contract import CALLER_TIMEOUT_HEADER
from stock_service.deduction.server_threads import lock_wait_threads
from tests.conftest import unique
from tests.helpers import Services, running_services

pytestmark = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)

THREADS = 4  # the worker's request threads
STALL = 12.0  # seconds the lock is held
STALLED_BUYERS = 6  # more than the threads, as the chaos run's buyers of the hot goods id
CALL_TIMEOUT_MS = 4000  # the order service's call timeout on the cluster
FREE_EVERY = 0.4  # seconds between free buyers
BOUND = 1.0  # seconds: the slowest free buyer, queue included (a healthy one takes ~0.05 s)


def threads_known(app: Flask) -> Flask:
    # The app learns its threads from gunicorn's command line; here the pool is ours.
    app.extensions["stock"].deduction.runner.queues.thread_bound = lock_wait_threads(THREADS)
    return app


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings.with_(lock_timeout=10.0)) as s:
        threads_known(s.stock_app)
        yield s


@pytest.fixture
def second_worker(services: Services) -> Iterator[Flask]:
    """Another worker of the stock service: its own lock client, lane and threads."""
    app = threads_known(stock_service.create_app(services.settings))
    yield app
    app.extensions["stock"].close()


@dataclass
class Scene:
    """What the scene measured: the measured buyers' waits (queue included) and answers, and
    the answers of the stalled goods id's buyers by status."""

    waits: list[float] = field(default_factory=list)  # only those sent during the stall
    statuses: Counter[tuple[int, object]] = field(default_factory=Counter)
    stalled: Counter[int] = field(default_factory=Counter)


def stall_scene(
    s: Services,
    stalled: str,
    stalled_lines: list[str],
    measured: list[str],
    apps: list[Flask] | None = None,
) -> Scene:
    """`stalled`'s lock held STALL s; STALLED_BUYERS buyers of `stalled_lines` (one line each)
    resending at each answer, spread over the workers `apps` (default: the stock app); one
    buyer of each of `measured` after the other, to the first, sent again once after a 503's
    Retry-After as the order service does; each worker behind a pool of
    THREADS threads (gunicorn's gthread pool: FIFO, no refusal). The measured buyers due once
    the stall is over are not sent (the scene's `waits` say how many were)."""
    apps = apps or [s.stock_app]
    flags = redis_lib.Redis.from_url(s.settings.redis_url)
    workers = [ThreadPoolExecutor(THREADS) for _ in apps]
    scene = Scene()

    def send(goods: list[str], n: int = 0) -> Future[tuple[int, dict[str, object]]]:
        flag = unique("f")
        flags.set(flag, "orderId", ex=120)
        app = apps[n % len(apps)]

        def call() -> tuple[int, dict[str, object]]:
            answer = app.test_client().put(
                f"/reduceStock/{flag}",
                json=[{"goodsId": g, "goodsNum": 1} for g in goods],
                headers={CALLER_TIMEOUT_HEADER: str(CALL_TIMEOUT_MS)},
            )
            return answer.status_code, answer.json or {}

        return workers[n % len(apps)].submit(call)

    locks = ZooKeeperLocks(s.settings.zk_hosts, s.settings.lock_root)
    held, over = threading.Event(), threading.Event()

    def hold() -> None:
        with locks.hold([stalled], timeout=10):
            held.set()
            over.wait(STALL)
            over.set()

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(10), "the stalling client never got the lock"

    def stalled_buyer(n: int) -> None:
        # One after another (buyers come apart), then each again at each answer, as long as
        # the lock is held.
        over.wait(0.2 * n)
        while not over.is_set():
            status, _ = send(stalled_lines, n).result(30)
            scene.stalled[status] += 1
            over.wait(0.2 if status == 503 else 0.0)

    buyers = [threading.Thread(target=stalled_buyer, args=(n,)) for n in range(STALLED_BUYERS)]
    for buyer in buyers:
        buyer.start()
    try:
        time.sleep(1.5)  # the stalled goods id's buyers have taken what they may
        for goods in measured:
            if over.is_set():
                break
            started = time.monotonic()
            status, body = send([goods]).result(30)
            if status == 503:  # refused at once, retryable: sent again after Retry-After
                time.sleep(float(body.get("retryAfter") or 1))
                status, body = send([goods]).result(30)
            scene.waits.append(time.monotonic() - started)
            scene.statuses[(status, body.get("outcome"))] += 1
            time.sleep(FREE_EVERY)
    finally:
        over.set()
        holder.join(30)
        for buyer in buyers:
            buyer.join(30)
        locks.close()
        for worker in workers:
            worker.shutdown()
    print(f"measured waits {[round(w, 2) for w in scene.waits]}; stalled {scene.stalled}")
    return scene


def test_buyers_of_a_stalled_goods_id_leave_a_worker_threads_for_the_others(
    services: Services,
) -> None:
    s = services
    stalled, free = unique("stalled"), [unique("free") for _ in range(12)]
    s.seed(stalled, 100)
    for goods in free:
        s.seed(goods, 10)
    scene = stall_scene(s, stalled, [stalled], free)
    assert max(scene.waits) < BOUND, f"free buyers waited {sorted(scene.waits)}"
    assert scene.statuses == {(200, "deducted"): len(free)}, scene.statuses
    assert all(s.level(goods) == 9 for goods in free)
    # Nothing deducted for it while held; after, each answer 200 a unit.
    assert s.level(stalled) == 100 - scene.stalled[200]
    assert scene.stalled[503] > 0  # refused at once, past half the threads


def test_buyers_of_a_stalled_and_a_hot_goods_id_hold_the_hot_one_from_its_buyers_no_more(
    services: Services, second_worker: Flask
) -> None:
    """Orders naming the stalled goods id and another hot one: before, each such request took
    the hot one's lock and held it while it waited for the stalled one (partial_hold, 1 s),
    one after another, from every worker, so the hot one's own buyers queued behind them (the
    chaos run's slowest other-goods buyers all named a second hot goods id). Now a request of
    several names, one of them stalled, is refused at once, holding none."""
    s = services
    stalled, hot = unique("stalled"), unique("hot")
    s.seed(stalled, 100)
    s.seed(hot, 100)
    scene = stall_scene(s, stalled, [stalled, hot], [hot] * 12, [s.stock_app, second_worker])
    # A hot buyer may be refused once while the stalled ones still wait on its lock (their
    # claims' first moments): answered after its Retry-After, within 2 s (ST's own floor).
    assert max(scene.waits) < 2 * BOUND, f"the hot goods id's buyers waited {sorted(scene.waits)}"
    assert scene.statuses == {(200, "deducted"): 12}, scene.statuses
    assert s.level(hot) == 100 - 12 - scene.stalled[200]
