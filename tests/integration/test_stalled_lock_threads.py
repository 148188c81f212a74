"""A stock process's threads beside a stalled lock: one goods id's lock held by a ZooKeeper
client of its own, buyers of that goods id that keep coming (a buyer resends on its call's
timeout or a 503, as the order service's lone resends and retries do), and a buyer of a free
goods id now and then, all through a pool of 4 threads in front of the stock app: gunicorn's
gthread worker (the cluster runs 8), which takes every request and queues it for a free thread.

Before, each waiter of the stalled lock held its thread until its caller's deadline (4 s here,
the cluster's STOCK_CALL_TIMEOUT), the resends took every thread, and each free buyer's request
queued behind them: answered after up to the call timeout (the chaos fault stall-lock-holder's
other-goods buyers at 3.6-4.0 s). Now the stalled lock's waiters take at most half the threads
(stock_service/lock_queue.py), the rest refused at once (503, Retry-After, nothing written), and
every free buyer is deducted within a second. PostgreSQL, real ZooKeeper and Redis."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import pytest
import redis as redis_lib

from coordination.locks.zookeeper import ZooKeeperLocks
from shared.contract import CALLER_TIMEOUT_HEADER
from shared.settings import Settings
from stock_service.server_threads import lock_wait_threads
from tests.conftest import unique
from tests.helpers import Services, running_services

pytestmark = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)

THREADS = 4  # the worker's request threads
STALL = 12.0  # seconds the lock is held
STALLED_BUYERS = 6  # more than the threads, as the chaos run's buyers of the hot goods id
CALL_TIMEOUT_MS = 4000  # the order service's call timeout on the cluster
FREE_EVERY = 0.4  # seconds between free buyers
BOUND = 1.0  # seconds: the slowest free buyer, queue included (a healthy one takes ~0.05 s)


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings.with_(lock_timeout=10.0)) as s:
        # The app learns its threads from gunicorn's command line; here the pool is ours.
        s.stock_app.extensions["stock"].deduction.runner.queues.thread_bound = lock_wait_threads(
            THREADS
        )
        yield s


def test_buyers_of_a_stalled_goods_id_leave_a_worker_threads_for_the_others(
    services: Services,
) -> None:
    s = services
    stalled, free = unique("stalled"), [unique("free") for _ in range(12)]
    s.seed(stalled, 100)
    for goods in free:
        s.seed(goods, 10)
    flags = redis_lib.Redis.from_url(s.settings.redis_url)
    worker = ThreadPoolExecutor(THREADS)  # gunicorn's gthread pool: FIFO, no refusal

    def send(goods: str) -> Future[tuple[int, dict[str, object]]]:
        flag = unique("f")
        flags.set(flag, "orderId", ex=120)

        def call() -> tuple[int, dict[str, object]]:
            answer = s.stock_app.test_client().put(
                f"/reduceStock/{flag}",
                json=[{"goodsId": goods, "goodsNum": 1}],
                headers={CALLER_TIMEOUT_HEADER: str(CALL_TIMEOUT_MS)},
            )
            return answer.status_code, answer.json or {}

        return worker.submit(call)

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
    stalled_answers: Counter[int] = Counter()

    def stalled_buyer(n: int) -> None:
        # One after another (buyers come apart), then each again at each answer, as long as
        # the lock is held.
        over.wait(0.2 * n)
        while not over.is_set():
            status, _ = send(stalled).result(30)
            stalled_answers[status] += 1
            over.wait(0.2 if status == 503 else 0.0)

    buyers = [threading.Thread(target=stalled_buyer, args=(n,)) for n in range(STALLED_BUYERS)]
    for buyer in buyers:
        buyer.start()
    waits: list[float] = []
    statuses: Counter[tuple[int, object]] = Counter()
    try:
        time.sleep(1.5)  # the stalled goods id's buyers have taken what they may
        for goods in free:
            assert not over.is_set(), "the stall ended before the free buyers: it tested nothing"
            started = time.monotonic()
            status, body = send(goods).result(30)
            waits.append(time.monotonic() - started)
            statuses[(status, body.get("outcome"))] += 1
            time.sleep(FREE_EVERY)
    finally:
        over.set()
        holder.join(30)
        for buyer in buyers:
            buyer.join(30)
        locks.close()
        worker.shutdown()
    print(f"free buyers' waits {sorted(round(w, 2) for w in waits)}; stalled {stalled_answers}")
    assert statuses == {(200, "deducted"): len(free)}, statuses
    assert max(waits) < BOUND, f"free buyers waited {sorted(waits)}"
    assert all(s.level(goods) == 9 for goods in free)
    # Nothing deducted for it while held; after, each answer 200 a unit.
    assert s.level(stalled) == 100 - stalled_answers[200]
    assert stalled_answers[503] > 0  # refused at once, past half the threads
