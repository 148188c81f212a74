"""Each lock backend against its real server: mutual exclusion, growing fencing tokens,
timeouts, lease renewal and loss."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib

import migrations
from coordination.locks import LockBackend, LockLost, LockTimeout
from coordination.locks.database import DatabaseLocks
from coordination.locks.etcd import EtcdLocks
from coordination.locks.redis import RedisLocks
from coordination.locks.redlock import RedLocks
from coordination.locks.unique_key import UniqueKeyLocks
from coordination.locks.zookeeper import ZooKeeperLocks
from inventory.local.servers import ServerProcess, start_zookeeper
from shared.database.engines import make_engine
from tests.conftest import (
    MYSQL_ADMIN_URL,
    PG_ADMIN_URL,
    _drop_database,
    _throwaway_database,
    unique,
)
from tests.helpers import held_by_another_thread
from tests.waiting import wait_for

BACKENDS = [
    "zookeeper",
    "redis",
    "etcd",
    "redlock",
    "database-postgresql",
    "database-mysql",
    "unique-key-postgresql",
    "unique-key-mysql",
    "unique-key-sqlite",
]


@pytest.fixture(scope="module")
def lock_databases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A throwaway PostgreSQL, MySQL and SQLite database each, with the stock schema (the lock
    tables)."""
    sqlite_url = f"sqlite:///{tmp_path_factory.mktemp('locks') / 'stock.db'}"
    migrations.upgrade(sqlite_url, "stock")
    made = {}
    for backend, admin in (("postgresql", PG_ADMIN_URL), ("mysql", MYSQL_ADMIN_URL)):
        name = f"inv_locks_{uuid.uuid4().hex[:8]}"
        made[backend] = (admin, name, _throwaway_database(admin, name))
        migrations.upgrade(made[backend][2], "stock")
    yield {"sqlite": sqlite_url, **{backend: url for backend, (_, _, url) in made.items()}}
    for admin, name, _ in made.values():
        _drop_database(admin, name)


@pytest.fixture(params=BACKENDS)
def locks(
    request: pytest.FixtureRequest,
    zk_server: ServerProcess,
    redis_server: ServerProcess,
    etcd_server: ServerProcess,
    redlock_servers: list[ServerProcess],
    lock_databases: dict[str, str],
) -> Iterator[LockBackend]:
    backend: LockBackend
    if request.param == "zookeeper":
        backend = ZooKeeperLocks(zk_server.address, f"/test-locks/{unique('root')}")
    elif request.param == "redis":
        client = redis_lib.Redis.from_url(f"redis://{redis_server.address}/0")
        backend = RedisLocks(client, ttl=5)
    elif request.param == "etcd":
        backend = EtcdLocks([f"http://{etcd_server.address}"], ttl=5, prefix=f"{unique('t')}/")
    elif request.param == "redlock":
        urls = [f"redis://{server.address}/0" for server in redlock_servers]
        backend = RedLocks(urls, ttl=5, prefix=f"{unique('t')}:")
    elif request.param.startswith("unique-key-"):
        engine = make_engine(lock_databases[request.param.rsplit("-", 1)[1]])
        backend = UniqueKeyLocks(engine, ttl=5)
    else:
        backend = DatabaseLocks(make_engine(lock_databases[request.param.split("-")[1]]))
    yield backend
    backend.close()


def test_database_locks_refuse_sqlite(tmp_path: Path) -> None:
    # SQLite alone: the refusal of SQLite as the lock's database is the point
    with pytest.raises(ValueError, match="PostgreSQL or MySQL"):
        DatabaseLocks(make_engine(f"sqlite:///{tmp_path / 'x.db'}"))


def most_holders_at_once(
    hold: Callable[[int], AbstractContextManager[object]], attempts: int = 30
) -> int:
    """Runs `attempts` holders on 6 threads, each holding for 5 ms; the most inside at once."""
    inside = most_inside = 0
    guard = threading.Lock()

    def work(i: int) -> None:
        nonlocal inside, most_inside
        with hold(i):
            with guard:
                inside += 1
                most_inside = max(most_inside, inside)
            time.sleep(0.005)  # a stay inside, so that a second holder would overlap this one
            with guard:
                inside -= 1

    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(work, range(attempts)))
    return most_inside


def test_one_holder_at_a_time(locks: LockBackend) -> None:
    name = unique("lock")
    assert most_holders_at_once(lambda _: locks.hold([name], timeout=30)) == 1


def test_fencing_tokens_grow_with_each_holder(locks: LockBackend) -> None:
    name = unique("lock")
    tokens = []
    for _ in range(4):
        with locks.hold([name], timeout=10) as lease:
            tokens.append(lease.tokens[name])
    assert all(isinstance(t, int) for t in tokens)
    assert tokens == sorted(tokens) and len(set(tokens)) == 4


def test_a_held_lock_makes_others_time_out(locks: LockBackend) -> None:
    name = unique("lock")
    with held_by_another_thread(locks, [name]):
        started = time.monotonic()
        with pytest.raises(LockTimeout), locks.hold([name], timeout=1.0):
            pass
        # Its own 1 s wait ended it, not the holder letting go (after 30 s): room for a loaded
        # machine in between.
        assert time.monotonic() - started < 10
    with locks.hold([name], timeout=5) as lease:  # released: free again
        lease.check()


def test_redis_watchdog_renews_a_lease_held_longer_than_its_ttl(
    redis_server: ServerProcess,
) -> None:
    client = redis_lib.Redis.from_url(f"redis://{redis_server.address}/0")
    locks = RedisLocks(client, ttl=0.6)
    name = unique("lock")
    with locks.hold([name], timeout=5) as lease:
        time.sleep(1.5)  # more than twice the TTL
        assert client.exists(f"inventory:lock:{name}") == 1
        lease.check()
    assert client.exists(f"inventory:lock:{name}") == 0
    locks.close()


def test_redis_watchdog_goes_on_renewing_when_one_lock_fails_unexpectedly(
    redis_server: ServerProcess,
) -> None:
    """A surprise renewing one lock (not a Redis error: a bug, a malformed reply) costs that
    lock its lease, never the watchdog thread and every other lock's renewals."""
    client = redis_lib.Redis.from_url(f"redis://{redis_server.address}/0")
    locks = RedisLocks(client, ttl=0.6)
    broken, kept = unique("lock"), unique("lock")

    def surprise() -> None:
        raise ValueError("a reply nobody expected")

    try:
        with locks.hold([broken], timeout=5) as first, locks.hold([kept], timeout=5) as second:
            for entry in list(locks._held):
                if entry.lock.name == f"inventory:lock:{broken}":
                    entry.lock.reacquire = surprise  # type: ignore[method-assign,assignment]
            time.sleep(1.5)  # more than twice the TTL
            assert client.exists(f"inventory:lock:{kept}") == 1
            second.check()
            assert not first.still_held()  # unrenewed: distrusted by its own TTL
            assert locks._watchdog is not None and locks._watchdog.is_alive()
    finally:
        locks.close()


def test_redis_lease_whose_key_was_taken_reports_itself_lost(redis_server: ServerProcess) -> None:
    client = redis_lib.Redis.from_url(f"redis://{redis_server.address}/0")
    locks = RedisLocks(client, ttl=0.6)
    name = unique("lock")
    with locks.hold([name], timeout=5) as lease:
        client.set(f"inventory:lock:{name}", "someone-else")  # as if it expired and was retaken
        wait_for(lambda: not lease.still_held(), "the lease seen lost", interval=0.05)
        with pytest.raises(LockLost):
            lease.check()
    locks.close()


def test_zookeeper_lease_is_not_trusted_after_the_connection_is_suspended(tmp_path: Path) -> None:
    server = start_zookeeper(tmp_path / "zk", fsync=False)
    locks = ZooKeeperLocks(server.address, "/test-locks", session_timeout=2.0)
    try:
        with locks.hold([unique("lock")], timeout=5) as lease:
            lease.check()
            server.pause()  # SIGSTOP: the server stops answering, as in a long GC pause
            try:
                wait_for(lambda: not lease.still_held(), "the lease distrusted", interval=0.05)
                with pytest.raises(LockLost):
                    lease.check()
            finally:
                server.resume()
    finally:
        locks.close()
        server.stop()


def test_a_lost_create_whose_lock_path_went_away_is_enqueued_again(
    zk_server: ServerProcess,
) -> None:
    """A create whose reply was lost, and was never applied, leaves nothing under its lock path;
    an empty container ZooKeeper deletes. The retry looks for its node there: the path gone, it
    makes the path again and enqueues, within the deadline (it used to read the missing path on
    every round, for ever, as the cached path was never made again)."""
    locks = ZooKeeperLocks(zk_server.address, f"/test-locks/{unique('root')}")
    name = unique("lock")
    claim = locks.new_claim([name])
    try:
        locks.ensure_parents([name])  # made, and remembered as made
        locks.client.delete(locks.path(name))  # as the server deletes an empty container
        claim.create_tried = True  # the create's reply was lost
        got: list[frozenset[str]] = []
        waiter = threading.Thread(
            target=lambda: got.append(claim.wait(time.monotonic() + 5)), daemon=True
        )
        waiter.start()
        waiter.join(15)
        stuck = waiter.is_alive()
    finally:
        locks.close()  # a waiter still going round finds no connection, and stops
    assert not stuck, "the claim went round its lost lock path past its deadline"
    assert got == [frozenset({name})]
    assert claim.tokens[name] is not None


def test_zookeeper_excludes_holders_in_different_clients(zk_server: ServerProcess) -> None:
    """Two backends stand for two processes: their threads meet only in ZooKeeper's queue."""
    root = f"/test-locks/{unique('root')}"
    backends = [ZooKeeperLocks(zk_server.address, root) for _ in range(2)]
    name = unique("lock")
    try:
        most = most_holders_at_once(lambda i: backends[i % 2].hold([name], timeout=30))
    finally:
        for backend in backends:
            backend.close()
    assert most == 1


def test_zookeeper_tokens_grow_across_waiters_and_claims_of_several_names(
    zk_server: ServerProcess,
) -> None:
    """B enqueues on x while A holds it (B's node is older than anything A sees), then takes x
    and y in one claim; C takes y after B. Each holder's token is above the one before."""
    locks = ZooKeeperLocks(zk_server.address, f"/test-locks/{unique('root')}")
    x, y = unique("x"), unique("y")
    tokens: dict[str, dict[str, int | None]] = {}
    try:
        with locks.hold([x], timeout=5) as lease_a:
            tokens["a"] = dict(lease_a.tokens)

            def hold_both() -> None:
                with locks.hold([x, y], timeout=10) as lease_b:
                    tokens["b"] = dict(lease_b.tokens)

            b = threading.Thread(target=hold_both)
            b.start()
            # A lets go only once B has queued behind it: B's node must be older than A's
            # release for the test to be the one its docstring tells.
            wait_for(lambda: len(locks.client.get_children(locks.path(x))) >= 2, "B queued")
        b.join(10)
        with locks.hold([y], timeout=5) as lease_c:
            tokens["c"] = dict(lease_c.tokens)
    finally:
        locks.close()
    assert tokens["a"][x] < tokens["b"][x]  # type: ignore[operator]
    assert tokens["b"][y] < tokens["c"][y]  # type: ignore[operator]


def etcd_keys(server: ServerProcess, prefix: str) -> list[str]:
    import base64

    import httpx

    start = base64.b64encode(prefix.encode()).decode()
    end = base64.b64encode(prefix[:-1].encode() + bytes([prefix.encode()[-1] + 1])).decode()
    reply = httpx.post(
        f"http://{server.address}/v3/kv/range", json={"key": start, "range_end": end}
    ).json()
    return [base64.b64decode(kv["key"]).decode() for kv in reply.get("kvs", [])]


def test_etcd_excludes_holders_in_different_processes_and_queues_without_a_herd(
    etcd_server: ServerProcess,
) -> None:
    """Two backends stand for two processes, each with its own leases; while one holds, the
    others queue as one key each under the lock's prefix, and leave nothing when done."""
    prefix = f"{unique('t')}/"
    backends = [
        EtcdLocks([f"http://{etcd_server.address}"], ttl=5, prefix=prefix) for _ in range(2)
    ]
    name = unique("lock")
    try:
        assert most_holders_at_once(lambda i: backends[i % 2].hold([name], timeout=30)) == 1
        assert etcd_keys(etcd_server, prefix) == []
        served: list[int] = []

        def wait_then_hold(i: int) -> None:
            with backends[i].hold([name], timeout=10):
                served.append(i)

        with backends[0].hold([name], timeout=5):
            waiters = [threading.Thread(target=wait_then_hold, args=(i,)) for i in (0, 1)]
            for waiter in waiters:
                waiter.start()
            # The holder and two queued keys: both waiters queue before it lets go.
            wait_for(lambda: len(etcd_keys(etcd_server, prefix)) >= 3, "two queued", interval=0.02)
        for waiter in waiters:
            waiter.join(10)
        assert sorted(served) == [0, 1]
    finally:
        for backend in backends:
            backend.close()
    assert etcd_keys(etcd_server, prefix) == []


def test_etcd_lease_that_expired_reports_itself_lost(etcd_server: ServerProcess) -> None:
    """The lease is revoked behind the holder's back (as if it had expired while the process
    was paused): the next keep-alive finds no TTL, the holder must not commit, and the lock is
    free for the next holder, whose token is higher."""
    import httpx

    locks = EtcdLocks([f"http://{etcd_server.address}"], ttl=3, prefix=f"{unique('t')}/")
    name = unique("lock")
    try:
        with locks.hold([name], timeout=5) as lease:
            claim_lease = next(iter(locks._leases))
            httpx.post(
                f"http://{etcd_server.address}/v3/lease/revoke", json={"ID": claim_lease.id}
            ).raise_for_status()
            wait_for(lambda: not lease.still_held(), "the lease seen lost", interval=0.05)
            with pytest.raises(LockLost):
                lease.check()
            other = EtcdLocks([f"http://{etcd_server.address}"], ttl=3, prefix=locks.prefix)
            with other.hold([name], timeout=2) as second:
                assert second.tokens[name] > lease.tokens[name]  # type: ignore[operator]
            other.close()
    finally:
        locks.close()


def test_etcd_keeper_goes_on_renewing_when_one_lease_fails_unexpectedly(
    etcd_server: ServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A keep-alive answered with something unreadable for one lease (a proxy's page, a bug)
    costs that lease its trust, never the keeper thread and every other lease's renewals."""
    locks = EtcdLocks([f"http://{etcd_server.address}"], ttl=1.5, prefix=f"{unique('t')}/")
    post = locks.gateway.post
    try:
        with locks.hold([unique("lock")], timeout=5) as first:
            (broken,) = list(locks._leases)

            def answer(path: str, body: dict[str, Any], timeout: float | None = None) -> Any:
                if path == "/v3/lease/keepalive" and body.get("ID") == broken.id:
                    raise ValueError("Expecting value: line 1 column 1 (char 0)")
                return post(path, body, timeout)

            monkeypatch.setattr(locks.gateway, "post", answer)
            with locks.hold([unique("lock")], timeout=5) as second:
                time.sleep(3.5)  # more than twice the TTL
                second.check()
                assert not first.still_held()
                assert locks._keeper is not None and locks._keeper.is_alive()
    finally:
        locks.close()


def test_etcd_lease_not_renewed_for_its_ttl_is_not_trusted(etcd_server: ServerProcess) -> None:
    """etcd itself paused (SIGSTOP): no keep-alive succeeds, and after a TTL the holder stops
    trusting its lease although nobody said it expired."""
    locks = EtcdLocks([f"http://{etcd_server.address}"], ttl=1.5, prefix=f"{unique('t')}/")
    try:
        with locks.hold([unique("lock")], timeout=5) as lease:
            lease.check()
            etcd_server.pause()
            try:
                wait_for(lambda: not lease.still_held(), "the lease distrusted", interval=0.05)
                with pytest.raises(LockLost):
                    lease.check()
            finally:
                etcd_server.resume()
    finally:
        locks.close()


def test_a_zookeeper_claim_sees_its_lock_move_when_the_holder_changes_not_while_it_stays(
    zk_server: ServerProcess,
) -> None:
    """C waits behind B, behind A the holder. While A holds, C's lock has not moved however
    long C waits (a stalled holder); once A lets go and B has it, C sees the lock move though
    its own turn has not come (a busy lock): the stock service's lock queues tell a stall from
    a queue by this (stock_service.deduction's lock_queue.py)."""
    locks = ZooKeeperLocks(zk_server.address, f"/test-locks/{unique('root')}")
    name = unique("hot")
    a, b, c = (locks.new_claim([name]) for _ in range(3))
    try:
        assert a.wait(time.monotonic() + 5) == {name}
        assert b.wait(time.monotonic() + 0.05) == frozenset()
        assert c.wait(time.monotonic() + 0.3) == frozenset()
        assert c.moved_at == {}  # the same holder all along
        before = time.monotonic()
        a.release_all()
        assert b.wait(time.monotonic() + 5) == {name}
        assert c.wait(time.monotonic() + 0.05) == frozenset()
        assert c.moved_at[name] >= before
        assert a.moved_at == {} and name not in b.held - {name}
    finally:
        for claim in (a, b, c):
            claim.release_all()
        locks.close()
