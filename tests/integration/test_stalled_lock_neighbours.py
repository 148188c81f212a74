"""A buyer is answered when their order is decided: one goods id's lock held 12 s by a client of
its own (another ZooKeeper client, on the path the stock service locks), and beside it three
waves of 25 concurrent genOrders, 24 of free goods ids and 1 of the stalled one in each. Every
buyer of a free goods id is CONFIRMED with p99 under 2 s; the stalled goods id's buyers end
CONFIRMED or with a retryable answer (their flag still live, nothing written), and none is a
lost sale: once the lock is free, the reconciler's pass deducts them. PostgreSQL, real
ZooKeeper and Redis, both services in this process.

Before, the batched reduceStock answered when its slowest member had its lock or gave up: the
23 orders batched with the stalled one waited for it (here until the stall ended; on gunicorn
the order service's 5 s call timeout, then retries that stalled again): p99 12.0 s on the code
before, 1.2 s after. The bound is robust, not a micro-timing: 2 s against a 12 s stall, where
the batch's budget (1 s) answers the wave.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import httpx
import pytest
import redis as redis_lib

from coordination.locks.zookeeper import ZooKeeperLocks
from order_service.placing.client import StockClient
from order_service.placing.retry import CallPolicy
from order_service.settling.reconcile import reconcile
from shared.config.settings import Settings
from tests.conftest import unique
from tests.helpers import Services, running_services
from tests.waiting import wait_for

pytestmark = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)

STALL = 12.0  # seconds the goods id's lock is held
WAVES = 3
FREE = 24  # free goods ids, one order of each in every wave
BOUND = 2.0  # p99 of the free goods ids' buyers, seconds


class PilotFirst:
    """Holds the order lane's next batch (the pilot's) before it runs until `go` is set, so that
    the wave's other 24 orders all queue behind it and form one batch with the stalled one. A
    lone order takes the single route instead, which waits for its lock up to its own call
    timeout: a different case, of the order side's lane (said in docs/combining.md)."""

    def __init__(self, s: Services) -> None:
        self.lane = s.order_app.extensions["orders"].flow.batches.combiner
        self.run_batch = self.lane.run_batch
        self.lane.run_batch = self._run_batch
        self.go = threading.Event()
        self.seen = threading.Event()
        self.held = False

    def _run_batch(self, key: Any, items: Any, handle: Any) -> Any:
        if not self.held:
            self.held = True
            self.seen.set()
            assert self.go.wait(30), "the wave was never let go"
        return self.run_batch(key, items, handle)

    def hold_next(self) -> None:
        self.held, self.seen, self.go = False, threading.Event(), threading.Event()


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    # The services' own call timeout and lock timeout (the test settings' are longer).
    configured = settings.with_(stock_call_timeout=5.0, lock_timeout=10.0)
    with running_services(configured) as s:
        yield s


class Stall:
    """The lock of `goods` held by a ZooKeeper client of its own for `seconds`, from a thread."""

    def __init__(self, settings: Settings, goods: str, seconds: float) -> None:
        self.locks = ZooKeeperLocks(settings.zk_hosts, settings.lock_root)
        self.held = threading.Event()
        self.thread = threading.Thread(target=self._hold, args=(goods, seconds))
        self.thread.start()
        assert self.held.wait(10), "the stalling client never got the lock"
        self.since = time.monotonic()

    def _hold(self, goods: str, seconds: float) -> None:
        with self.locks.hold([goods], timeout=10):
            self.held.set()
            time.sleep(seconds)

    def end(self) -> None:
        self.thread.join(30)
        self.locks.close()


def timed_order(s: Services, goods: str) -> tuple[float, Any]:
    started = time.monotonic()
    body = {"userId": unique("u"), "items": [{"goodsId": goods, "num": 1}]}
    answer = s.order_app.test_client().post("/genOrder", json=body)
    return time.monotonic() - started, answer


def wave(
    s: Services, pool: ThreadPoolExecutor, pilot: PilotFirst, free: list[str], stalled: str
) -> tuple[list[Future[tuple[float, Any]]], Future[tuple[float, Any]]]:
    """25 concurrent orders: the pilot (free[0]) leads the order lane, then the 23 other free
    ones and the stalled one queue behind it together and form the next batch."""
    pilot.hold_next()
    first = pool.submit(timed_order, s, free[0])
    assert pilot.seen.wait(10), "the pilot's batch never came"
    start = threading.Barrier(len(free))

    def buyer(goods: str) -> tuple[float, Any]:
        start.wait()
        return timed_order(s, goods)

    others = [pool.submit(buyer, goods) for goods in free[1:]]
    stalled_order = pool.submit(buyer, stalled)
    wait_for(lambda: pilot.lane.backlog("orders") == (True, len(free)), "the wave queued")
    pilot.go.set()
    return [first, *others], stalled_order


def test_buyers_of_free_goods_are_confirmed_within_two_seconds_beside_a_lock_held_12_s(
    services: Services,
) -> None:
    s = services
    stalled, free = unique("stalled"), [unique("free") for _ in range(FREE)]
    s.seed(stalled, 10)
    for goods in free:
        s.seed(goods, 10)
    pilot = PilotFirst(s)
    stall = Stall(s.settings, stalled, STALL)
    freed: list[tuple[float, Any]] = []
    stalled_orders: list[Future[tuple[float, Any]]] = []
    try:
        with ThreadPoolExecutor(FREE + WAVES + 2) as pool:
            for _ in range(WAVES):
                others, stalled_order = wave(s, pool, pilot, free, stalled)
                freed += [f.result(60) for f in others]
                stalled_orders.append(stalled_order)
            waves_took = time.monotonic() - stall.since
            stalled_answers = [f.result(60)[1] for f in stalled_orders]
    finally:
        stall.end()
    seconds = sorted(t for t, _ in freed)
    p99 = seconds[math.ceil(0.99 * len(seconds)) - 1]
    print(f"free goods' buyers: p50 {seconds[len(seconds) // 2]:.2f} s, p99 {p99:.2f} s")
    statuses = Counter((a.status_code, a.json["status"]) for _, a in freed)
    assert statuses == {(200, "CONFIRMED"): WAVES * FREE}, statuses
    assert p99 < BOUND, f"p99 {p99:.2f} s of the free goods ids' buyers: {seconds}"
    # The waves ran while the lock was held: else they tested nothing.
    assert waves_took < STALL, f"the waves took {waves_took:.1f} s, past the stall"

    # The stalled goods id's buyers: CONFIRMED (a lone call that outwaited the stall), or a
    # retryable answer, their flag live, nothing written for them yet. None lost: once the
    # lock is free the reconciler's pass deducts each under its flag.
    flags = redis_lib.Redis.from_url(s.settings.redis_url)
    pending = []
    for answer in stalled_answers:
        order = answer.json["orderId"]
        if answer.status_code == 200:
            assert answer.json["status"] == "CONFIRMED"
            continue
        assert (answer.status_code, answer.json["status"]) in ((202, "PENDING"), (503, "PENDING"))
        assert flags.exists(order) == 1 and s.flows(flag=order) == []
        pending.append(order)
    with StockClient(
        "http://stock", CallPolicy(5, 0, 10, 0), transport=httpx.WSGITransport(app=s.stock_app)
    ) as stock:
        deps = s.order_app.extensions["orders"]
        again = deps.flow.batches.flags  # deducted again under its flag, as the reconciler does
        reconcile(deps.store, stock, timedelta(0), flags=again, void_after=timedelta(hours=1))
    for answer in stalled_answers:
        order = answer.json["orderId"]
        state = s.order.get(f"/orders/{order}").json
        assert state is not None and state["status"] == "CONFIRMED", (order, state)
        assert [row["num"] for row in s.flows(flag=order)] == [1]
    assert s.level(stalled) == 10 - WAVES
    assert all(s.level(goods) == 10 - WAVES for goods in free)
    print(f"stalled goods id's buyers: {len(pending)} answered retryable, then reconciled")
