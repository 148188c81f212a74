"""The elected reconciler survives what ZooKeeper and etcd do to sessions: a blip the session
survives, a server restarted on its data, a session lost. Before and after each, a leftover
PENDING order (what a worker killed after the stock commit leaves) is settled by the
reconcilers on their own, through a real stock service over HTTP.

Fault 1 of the settlement issue: after a ZooKeeper restart within the session timeout, the
leader logged "not the leader any more" and no reconciler passed again, both election nodes
stayed, and the leftover stayed PENDING."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis as redis_lib
from werkzeug.serving import make_server

import migrations
import stock_service
from inventory.local.etcd_server import start_etcd
from inventory.local.servers import ServerProcess, free_port, start_zookeeper, wait_until
from order_service.settling.reconciler import serve
from order_service.storage import transitions
from order_service.storage.store import OrderStore
from shared.database.engines import make_engine
from tests.conftest import ADMIN, make_settings, unique
from tests.zk_proxy import CuttingProxy

# ZooKeeper's op codes for exists, getData, ping, getChildren2: the proxy cuts the connection
# at the next of these (the leader's question before a pass, a standby's ping)
TRAFFIC = {3, 4, 11, 12}


class World:
    """ZooKeeper (behind a proxy that can cut connections) or etcd of its own, a stock service
    served over HTTP, and two reconcilers on threads of this process."""

    def __init__(self, tmp: Path, backend: str, redis: ServerProcess) -> None:
        self.tmp, self.backend = tmp, backend
        # SQLite alone: ZooKeeper's and etcd's faults are under test; the rows only wait here
        url = f"sqlite:///{tmp / 'world.db'}"
        migrations.upgrade(url, "order")
        migrations.upgrade(url, "stock")
        self.zk: ServerProcess | None = None
        self.etcd: ServerProcess | None = None
        self.proxy: CuttingProxy | None = None
        if backend == "zookeeper":
            self.zk = start_zookeeper(tmp / "zk", fsync=False)
            self.proxy = CuttingProxy(self.zk.port)
            coordination: dict[str, object] = {"zk_hosts": self.proxy.address}
        else:
            self.etcd = start_etcd(tmp / "etcd")
            coordination = {"etcd_endpoints": f"http://{self.etcd.address}"}
        port = free_port()
        base = make_settings(url, self.zk or redis, redis, **coordination)  # type: ignore[arg-type]
        self.settings = base.with_(
            lock_backend=backend,
            stock_service_url=f"http://127.0.0.1:{port}",
            reconcile_interval=0.2,
            reconcile_older_than=0,
            reconcile_age_unchecked_for_tests=True,
            zk_session_timeout=6.0,
            etcd_lease_ttl=6.0,
            log_level="INFO",
        )
        stock_settings = self.settings.with_(
            lock_backend="none"
        )  # the stock side's lock is not under test
        self.stock_app = stock_service.create_app(stock_settings)
        self.http = make_server("127.0.0.1", port, self.stock_app, threaded=True)
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        self.store = OrderStore(make_engine(url))
        self.flags = redis_lib.Redis.from_url(self.settings.redis_url)
        self.stops = [threading.Event() for _ in range(2)]
        self.threads = [
            threading.Thread(target=serve, args=(self.settings, f"rec{i}", stop), daemon=True)
            for i, stop in enumerate(self.stops)
        ]
        for thread in self.threads:
            thread.start()

    def leftover(self, within: float = 30) -> str:
        """A PENDING order whose deduction committed after its request ended.

        Right after a disruption the lock service may still be reconnecting, and a deduction
        then ends `voided` (its flag dead, nothing deducted): a correct answer, but not a
        leftover. So a fresh order is tried until one is deducted; the test is about what the
        reconcilers do with it, not about the first deduction after the fault."""
        client = self.stock_app.test_client()
        deadline = time.monotonic() + within
        outcomes: list[str] = []
        while time.monotonic() < deadline:
            goods, order_id = unique(), unique("o")
            assert client.put(f"/stock/{goods}", json={"num": 5}, headers=ADMIN).status_code == 200
            transitions.create_pending(self.store, order_id, unique("u"), {goods: 1}, None, None)
            self.flags.set(order_id, "orderId", ex=600)
            answer = client.put(
                f"/reduceStock/{order_id}", json=[{"goodsId": goods, "goodsNum": 1}]
            )
            outcome = str((answer.json or {}).get("outcome", answer.status_code))
            if outcome == "deducted":
                return order_id
            outcomes.append(outcome)
            time.sleep(0.5)
        pytest.fail(f"no deduction within {within} s after the disruption: {outcomes}")

    def settled(self, order_id: str, within: float) -> None:
        def confirmed() -> bool:
            row = self.store.get(order_id)
            return row is not None and row.status == "CONFIRMED"

        wait_until(confirmed, within, f"order {order_id} settled by the reconcilers")

    def close(self) -> None:
        for stop in self.stops:
            stop.set()
        for thread in self.threads:
            thread.join(20)
        self.http.shutdown()
        self.stock_app.extensions["stock"].close()
        self.store.engine.dispose()
        self.flags.close()
        for server in (self.zk, self.etcd):
            if server is not None:
                server.stop()
        if self.proxy is not None:
            self.proxy.close()


@pytest.fixture
def world(tmp_path: Path, redis_server: ServerProcess) -> Iterator[Callable[[str], World]]:
    made: list[World] = []

    def make(backend: str) -> World:
        made.append(World(tmp_path, backend, redis_server))
        return made[-1]

    yield make
    for w in made:
        w.close()


def restart_zookeeper(w: World) -> None:
    """Stopped and started again on its data within a second or two: sessions survive."""
    assert w.zk is not None
    w.zk.stop()
    w.zk = start_zookeeper(w.tmp / "zk", port=w.zk.port, fsync=False)


def blip(w: World) -> None:
    """A connection cut and new ones refused for a second: SUSPENDED, then CONNECTED on the
    same session."""
    assert w.proxy is not None
    w.proxy.cut_at(TRAFFIC, applied=False, then_refuse_for=1.0)
    wait_until(lambda: w.proxy is not None and w.proxy.cuts >= 1, 10, "the cut")


def lose_sessions(w: World) -> None:
    """Cut and kept away past the session timeout: the sessions expire (LOST), every node of
    theirs is gone, and the clients come back on new sessions."""
    assert w.proxy is not None
    w.proxy.cut_at(TRAFFIC, applied=False, then_refuse_for=2 * w.settings.zk_session_timeout)
    wait_until(lambda: w.proxy is not None and w.proxy.cuts >= 1, 10, "the cut")


def restart_etcd(w: World) -> None:
    assert w.etcd is not None
    w.etcd.stop()
    w.etcd = start_etcd(w.tmp / "etcd", port=w.etcd.port)


@pytest.mark.parametrize(
    ("backend", "disrupt"),
    [
        ("zookeeper", restart_zookeeper),
        ("zookeeper", blip),
        ("zookeeper", lose_sessions),
        ("etcd", restart_etcd),
    ],
    ids=["zookeeper-restart", "zookeeper-blip", "zookeeper-session-lost", "etcd-restart"],
)
def test_the_reconcilers_settle_a_leftover_order_after_the_coordination_service_misbehaves(
    world: Callable[[str], World],
    backend: str,
    disrupt: Callable[[World], None],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="reconciler")
    w = world(backend)
    w.settled(w.leftover(), within=20)
    disrupt(w)
    w.settled(w.leftover(), within=40)
    elected = [r.getMessage() for r in caplog.records if " elected " in r.getMessage()]
    assert elected, "nobody was ever elected"
