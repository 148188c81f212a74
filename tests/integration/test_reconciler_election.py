"""The elected reconciler: its fence refuses a deposed leader's write (on every database),
exactly one of several instances acts, and a standby takes over when the leader resigns or
is killed, on ZooKeeper (kazoo's Election) and on etcd (its election service)."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from inventory.local.servers import ServerProcess, spawn, stop_pid, wait_until
from order_service.settling.reconciler import serve
from order_service.storage import transitions
from order_service.storage.statements import FENCE_READ
from order_service.storage.store import OrderStore
from order_service.storage.transitions import Fence, Finish, Superseded
from shared.config.settings import Settings
from shared.database.engines import make_engine
from tests.conftest import unique


def fence_now(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(FENCE_READ).one().token)


def pending_order(store: OrderStore) -> str:
    order_id = unique("o")
    transitions.create_pending(store, order_id, unique("u"), {unique(): 1}, None, None)
    transitions.finish(store, Finish(order_id, "PENDING", "outcome_unknown: ConnectError"))
    return order_id


def test_a_deposed_leaders_write_is_refused_by_the_fence(database_url: str) -> None:
    store = OrderStore(make_engine(database_url))
    base = fence_now(store.engine)
    first, second = pending_order(store), pending_order(store)
    assert transitions.settle(
        store, first, "PENDING", "CONFIRMED", "reconciled", fence=Fence(0, base + 10)
    )
    with pytest.raises(Superseded, match=f"token {base + 10}"):
        transitions.settle(
            store, second, "PENDING", "CONFIRMED", "reconciled", fence=Fence(0, base + 5)
        )
    assert store.get(second).status == "PENDING"  # type: ignore[union-attr]
    # the same leader again, and a newer one, still write
    assert transitions.settle(
        store, second, "PENDING", "CONFIRMED", "reconciled", fence=Fence(0, base + 10)
    )
    assert fence_now(store.engine) == base + 10
    store.engine.dispose()


@pytest.fixture
def reconciler_settings(
    tmp_path: Path, zk_server: ServerProcess, etcd_server: ServerProcess
) -> Settings:
    # SQLite alone: the elections are under test; the fence's SQL is tested above on all three
    url = f"sqlite:///{tmp_path / 'order.db'}"
    import migrations

    migrations.upgrade(url, "order")
    return Settings(
        order_database_url=url,
        zk_hosts=zk_server.address,
        etcd_endpoints=f"http://{etcd_server.address}",
        reconcile_interval=0.1,
        zk_session_timeout=3.0,
        etcd_lease_ttl=3.0,
    )


class Instances:
    """Reconcilers on threads of this process, each with its own election client."""

    def __init__(self, settings: Settings, names: list[str]) -> None:
        self.stops = {name: threading.Event() for name in names}
        self.threads = {
            name: threading.Thread(target=serve, args=(settings, name, stop), daemon=True)
            for name, stop in self.stops.items()
        }
        for thread in self.threads.values():
            thread.start()

    def stop(self, name: str) -> None:
        self.stops[name].set()
        self.threads[name].join(15)

    def stop_all(self) -> None:
        for name in self.stops:
            self.stop(name)


def passes(caplog: pytest.LogCaptureFixture, names: list[str]) -> dict[str, int]:
    counts = dict.fromkeys(names, 0)
    for record in caplog.records:
        words = record.getMessage().split()
        if len(words) > 1 and words[1] == "pass" and words[0] in counts:
            counts[words[0]] += 1
    return counts


@pytest.fixture
def instances(reconciler_settings: Settings, request: pytest.FixtureRequest) -> Iterator[object]:
    made: list[Instances] = []

    def start(backend: str, names: list[str], **overrides: object) -> Instances:
        settings = reconciler_settings.with_(lock_backend=backend, **overrides)
        made.append(Instances(settings, names))
        return made[-1]

    yield start
    for group in made:
        group.stop_all()


@pytest.mark.parametrize("backend", ["zookeeper", "etcd"])
def test_one_instance_reconciles_and_a_standby_takes_over_when_it_resigns(
    instances, backend: str, caplog: pytest.LogCaptureFixture
) -> None:  # type: ignore[no-untyped-def]
    caplog.set_level(logging.INFO, logger="reconciler")
    names = [unique(f"r{i}") for i in range(3)]
    # Sessions and leases of 20 s: a handover at once (a resignation deletes the leader's node
    # or key) and one after the session's expiry are then far apart, even on a loaded machine.
    group = instances(backend, names, zk_session_timeout=20.0, etcd_lease_ttl=20.0)
    wait_until(lambda: sum(passes(caplog, names).values()) >= 5, 20, "five passes")
    first = passes(caplog, names)
    leaders = [name for name, count in first.items() if count]
    assert len(leaders) == 1, first  # exactly one instance acts
    group.stop(leaders[0])  # resigns on the way out
    resigned = time.monotonic()
    others = [n for n in names if n != leaders[0]]
    wait_until(lambda: any(passes(caplog, others).values()), 40, "a standby's pass")
    took = time.monotonic() - resigned
    after = passes(caplog, others)
    assert len([n for n, c in after.items() if c]) == 1, after
    # The point: a resignation hands over at once (well under 1 s on an idle machine), not
    # after the 20 s session timeout; 10 s leaves room for a loaded one.
    assert took < 10.0, f"took {took:.1f} s"
    tokens = [
        int(r.getMessage().split("token=")[1].split()[0])
        for r in caplog.records
        if " elected " in r.getMessage()
    ]
    assert tokens == sorted(tokens) and len(set(tokens)) == len(tokens)


def test_a_killed_leader_is_replaced_after_its_session_expires(
    reconciler_settings: Settings, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "ORDER_DATABASE_URL": reconciler_settings.order_database_url,
        "ZK_HOSTS": reconciler_settings.zk_hosts,
        "ZK_SESSION_TIMEOUT": "2",
        "RECONCILE_INTERVAL": "0.2",
        "INVENTORY_HOME": str(tmp_path / "nothing"),
    }
    logs = {name: tmp_path / f"{name}.log" for name in ("a", "b")}
    argv = [sys.executable, "-m", "inventory.cli", "reconciler", "--name"]
    pids = {name: spawn([*argv, name], log, tmp_path, env) for name, log in logs.items()}

    def elected(name: str) -> bool:
        return " elected " in logs[name].read_text(errors="replace")

    try:
        wait_until(lambda: elected("a") or elected("b"), 30, "a leader")
        leader = "a" if elected("a") else "b"
        other = "b" if leader == "a" else "a"
        os.kill(pids[leader], signal.SIGKILL)  # no resignation: only the session's expiry
        killed = time.monotonic()
        wait_until(lambda: elected(other), 20, "the standby's election")
        took = time.monotonic() - killed
        assert 1.0 < took < 10.0  # about the 2 s session timeout
    finally:
        for pid in pids.values():
            stop_pid(pid)
