"""Combining against real ZooKeeper, Redis and each SQL database: many deductions in one lock
hold, each with the answer a serial run would give it; a failure of the hold fails its whole
batch, writes nothing and leaves every flag for the retry."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib
import sqlalchemy as sa

import migrations
import stock_service
from inventory.local.client import lock_call_timeout
from inventory.local.servers import ServerProcess, start_zookeeper, wait_until
from shared.config.settings import Settings
from stock_service.deduction.steps import LANE
from tests.conftest import (
    MYSQL_ADMIN_URL,
    PG_ADMIN_URL,
    _drop_database,
    _throwaway_database,
    make_settings,
    unique,
)
from tests.helpers import PauseAt, Services, held_by_another_thread, running_services

Lines = dict[str, int]


def set_flags(s: Services, *flags: str) -> None:
    client = redis_lib.Redis.from_url(s.settings.redis_url)
    for flag in flags:
        client.set(flag, "orderId", ex=600)
    client.close()


def flags_in_redis(s: Services, flags: list[str]) -> list[str]:
    client = redis_lib.Redis.from_url(s.settings.redis_url, decode_responses=True)
    try:
        return [flag for flag in flags if client.exists(flag)]
    finally:
        client.close()


def reduce(s: Services, flag: str, lines: Lines) -> tuple[int, dict[str, Any]]:
    body = [{"goodsId": g, "goodsNum": n} for g, n in lines.items()]
    response = s.stock_app.test_client().put(f"/reduceStock/{flag}", json=body)
    return response.status_code, response.json


def flows_by_flag(s: Services, goods: list[str]) -> dict[str, Lines]:
    out: dict[str, Lines] = defaultdict(dict)
    for goods_id in goods:
        for row in s.flows(goods_id=goods_id):
            assert row["goods_id"] not in out[row["flag"]], "a flag deducted twice"
            out[row["flag"]][row["goods_id"]] = row["num"]
    return out


def one_batch(
    s: Services, requests: list[tuple[str, Lines]], pilot_threads: set[int] | None = None
) -> list[tuple[int, dict[str, Any]]]:
    """Sends `requests` so that they are served as one batch: the lock of their goods is held
    elsewhere while a pilot request leads the lane and they queue behind it, in this order.
    Each request's flag is set in Redis as it is sent; a flag sent twice passes the
    pre-filter twice (it is deleted only once the batch has decided it). Returns their
    answers, in order. `pilot_threads`: the pilot's thread is added to it, and the pilot's
    answer is only awaited (a fault meant for the batch may catch the pilot's hold too: with
    two groups it commits while the batch runs)."""
    deps = s.stock_app.extensions["stock"]
    goods = sorted({g for _, lines in requests for g in lines})
    pilot_goods = unique("pilot")
    s.seed(pilot_goods, 1)
    pilot = unique("flag")
    set_flags(s, pilot)
    answers: list[tuple[int, dict[str, Any]] | None] = [None] * len(requests)
    with ThreadPoolExecutor(len(requests) + 1) as pool:
        with held_by_another_thread(deps.locks, [*goods, pilot_goods]):
            pilot_answer = pool.submit(_noted, pilot_threads, reduce, s, pilot, {pilot_goods: 1})
            queued(deps, 0)
            futures = []
            for i, (flag, lines) in enumerate(requests):
                set_flags(s, flag)
                futures.append(pool.submit(reduce, s, flag, lines))
                queued(deps, i + 1)
        # Each answer comes within its lock's wait (the holder above released it at once).
        piloted = pilot_answer.result(lock_call_timeout(s.settings))[0]
        assert pilot_threads is not None or piloted in (200, 409)
        for i, future in enumerate(futures):
            answers[i] = future.result(lock_call_timeout(s.settings))
    return [a for a in answers if a is not None]


def _noted(threads: set[int] | None, call: Callable[..., Any], *args: Any) -> Any:
    if threads is not None:
        threads.add(threading.get_ident())
    return call(*args)


class OutsideThreads(PauseAt):
    """PauseAt at the first firing of `point` in a thread not in `threads`: the batch's hold,
    not the pilot's, whichever fires first (with two groups both may be in their transactions
    at once)."""

    def __init__(self, point: str, meanwhile: Callable[[], object], threads: set[int]) -> None:
        super().__init__(point, meanwhile)
        self.threads = threads

    def fire(self, point: str) -> None:
        if threading.get_ident() not in self.threads:
            super().fire(point)


class ClaimAfter:
    """The lock backend `locks`, whose first claim is made only once `go_on` is set: the
    batch that makes it leads the lane meanwhile, and requests queue behind it."""

    def __init__(self, locks: Any, go_on: threading.Event) -> None:
        self._locks = locks
        self._go_on: threading.Event | None = go_on

    def __getattr__(self, name: str) -> Any:
        return getattr(self._locks, name)

    def new_claim(self, names: Any) -> Any:
        go_on, self._go_on = self._go_on, None
        if go_on is not None:
            assert go_on.wait(10)
        return self._locks.new_claim(names)


def queued(deps: Any, count: int) -> None:
    """Until a batch runs in the lane and `count` requests queue behind it."""
    wait_until(lambda: deps.deduction.combiner.backlog(LANE) == (True, count), 5, "the queue")


@pytest.fixture
def patient(settings: Settings) -> Settings:
    """A long patience: a batch waits for its whole lock, as one_batch needs."""
    return settings.with_(deduct_batch_patience=30.0)


def test_a_batch_with_an_impossible_request_and_a_duplicate_deducts_the_others(
    patient: Settings,
) -> None:
    with running_services(patient) as s:
        goods = unique()
        s.seed(goods, 10)
        f1, f2, f3, f4 = (unique("flag") for _ in range(4))
        answers = one_batch(
            s,
            [
                (f1, {goods: 2}),
                (f2, {goods: 100}),  # cannot fit
                (f3, {goods: 3}),
                (f3, {goods: 3}),  # the same flag again, while the first is still pending
                (f4, {goods: 1}),
            ],
        )
        outcomes = [(status, body["outcome"]) for status, body in answers]
        assert outcomes == [
            (200, "deducted"),
            (409, "insufficient"),
            (200, "deducted"),
            (200, "duplicate"),
            (200, "deducted"),
        ]
        assert answers[1][1]["shortfalls"] == [
            {"goodsId": goods, "requested": 100, "available": 8, "seedVersion": 1}
        ]
        assert {body["lock"]["batchSize"] for _, body in answers if "lock" in body} == {5}
        assert s.level(goods) == 10 - 2 - 3 - 1
        assert flows_by_flag(s, [goods]) == {f1: {goods: 2}, f3: {goods: 3}, f4: {goods: 1}}


@pytest.mark.parametrize("batch_max", [32, 1])
@pytest.mark.parametrize("backend", ["zookeeper", "redis", "database"])
def test_many_buyers_of_mixed_requests_are_accounted_exactly(
    settings: Settings, backend: str, batch_max: int
) -> None:
    # SQLite alone: the database lock is refused there; the test proper runs on the servers
    if backend == "database" and settings.stock_database_url.startswith("sqlite"):
        with pytest.raises(ValueError, match="PostgreSQL or MySQL"):  # refused as a setting
            stock_service.create_app(settings.with_(lock_backend=backend))
        return
    configured = settings.with_(lock_backend=backend, deduct_batch_max=batch_max)
    rng = random.Random(11)
    hot, a, b = unique("hot"), unique("a"), unique("b")
    seeded = {hot: 30, a: 12, b: 6}
    requests: list[tuple[str, Lines]] = []
    requests += [(unique("flag"), {hot: rng.randint(1, 3)}) for _ in range(50)]
    requests += [(unique("flag"), {hot: 1, a: 1}) for _ in range(15)]
    requests += [(unique("flag"), {a: rng.randint(1, 2), b: 1}) for _ in range(12)]
    requests += [(unique("flag"), {hot: 1000}) for _ in range(6)]
    twice = [(unique("flag"), {hot: 1, b: 1}) for _ in range(6)]
    sends = requests + twice + twice  # each of `twice` sent by two callers at once
    rng.shuffle(sends)
    with running_services(configured) as s:
        for goods, num in seeded.items():
            s.seed(goods, num)
        set_flags(s, *(flag for flag, _ in requests + twice))
        with ThreadPoolExecutor(max_workers=16) as pool:
            answers = list(pool.map(lambda sent: (sent, reduce(s, *sent)), sends))

        assert {status for _, (status, _) in answers} <= {200, 409}
        final = {g: s.level(g) or 0 for g in seeded}
        flows = flows_by_flag(s, list(seeded))
        by_flag: dict[str, list[str]] = defaultdict(list)
        for (flag, _), (_, body) in answers:
            by_flag[flag].append(body["outcome"])
        lines_of = dict(requests + twice)
        for flag, outcomes in by_flag.items():
            count = Counter(outcomes)
            # Exactly its lines as flows when deducted, no flows otherwise, never twice.
            assert count["deducted"] <= 1
            assert flows.get(flag, {}) == (lines_of[flag] if count["deducted"] else {})
        for flag, _ in twice:
            # Sent twice at once: if one deducted, the other was told `duplicate` (by the
            # pre-filter or, both having passed it, by the stock flow under the lock).
            outcomes = Counter(by_flag[flag])
            if outcomes["deducted"]:
                assert outcomes == {"deducted": 1, "duplicate": 1}, outcomes
        for (flag, lines), (_, body) in answers:
            if body["outcome"] == "insufficient":
                # Levels only go down: what did not fit then does not fit at the end either.
                assert any(final[g] < n for g, n in lines.items()), (flag, lines, final)
        for goods, num in seeded.items():
            assert final[goods] >= 0
            assert num - final[goods] == sum(f.get(goods, 0) for f in flows.values())


@pytest.fixture
def own_zk(tmp_path: Path) -> Iterator[ServerProcess]:
    server = start_zookeeper(tmp_path / "zk", fsync=False)
    yield server
    server.stop()


def test_lock_lost_in_the_middle_of_a_batch_writes_nothing_and_puts_every_flag_back(
    database_url: str, own_zk: ServerProcess, redis_server: ServerProcess
) -> None:
    settings = make_settings(
        database_url, own_zk, redis_server, zk_session_timeout=4.0, deduct_batch_patience=30.0
    )
    with running_services(settings) as s:
        deps = s.stock_app.extensions["stock"]

        def lose_the_connection() -> None:
            own_zk.pause()  # the lock service stops answering: the session is suspended
            try:
                wait_until(lambda: not deps.locks.connected.is_set(), 10, "suspension")
            finally:
                own_zk.resume()

        # After the read of the batch under test, not the pilot's (its thread): with two
        # groups the order in which the two read is not fixed.
        pilot: set[int] = set()
        deps.deduction.faults = OutsideThreads("stop_after_read", lose_the_connection, pilot)
        goods = unique()
        s.seed(goods, 10)
        flags = [unique("flag") for _ in range(4)]
        answers = one_batch(s, [(flag, {goods: 1}) for flag in flags], pilot)
        assert [status for status, _ in answers] == [503] * 4
        assert {body["dependency"] for _, body in answers} == {"lock"}
        assert s.level(goods) == 10
        assert flows_by_flag(s, [goods]) == {}
        assert flags_in_redis(s, flags) == flags


@pytest.fixture(scope="module", params=["postgresql", "mysql"])
def server_database(request: pytest.FixtureRequest) -> Iterator[tuple[str, str, str]]:
    """A database of this module's own on a server whose connections can be cut."""
    admin = PG_ADMIN_URL if request.param == "postgresql" else MYSQL_ADMIN_URL
    name = f"inv_cut_{unique('db').split('-')[1]}"
    url = _throwaway_database(admin, name)
    migrations.upgrade(url, "order")
    migrations.upgrade(url, "stock")
    yield admin, name, url
    _drop_database(admin, name)


def cut_connections(admin_url: str, name: str) -> Callable[[], None]:
    """Kills every connection to database `name`: to its clients the server went away."""

    def cut() -> None:
        admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            if admin.url.get_backend_name() == "postgresql":
                conn.execute(
                    sa.text(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE datname = :n AND pid <> pg_backend_pid()"
                    ),
                    {"n": name},
                )
            else:
                ids = conn.execute(
                    sa.text("SELECT id FROM information_schema.processlist WHERE db = :n"),
                    {"n": name},
                ).scalars()
                for connection_id in list(ids):
                    conn.execute(sa.text(f"KILL {int(connection_id)}"))
        admin.dispose()

    return cut


def test_database_down_in_the_middle_of_a_batch_writes_nothing_and_puts_every_flag_back(
    server_database: tuple[str, str, str], zk_server: ServerProcess, redis_server: ServerProcess
) -> None:
    admin, name, url = server_database
    settings = make_settings(url, zk_server, redis_server, deduct_batch_patience=30.0)
    with running_services(settings) as s:
        deps = s.stock_app.extensions["stock"]
        # Inside the batch's write transaction, before commit (not the pilot's: its thread).
        pilot: set[int] = set()
        cut = cut_connections(admin, name)
        deps.deduction.faults = OutsideThreads("kill_in_transaction", cut, pilot)
        goods = unique()
        s.seed(goods, 10)
        flags = [unique("flag") for _ in range(4)]
        answers = one_batch(s, [(flag, {goods: 1}) for flag in flags], pilot)
        assert [status for status, _ in answers] == [503] * 4
        assert {body["dependency"] for _, body in answers} == {"database"}
        assert s.level(goods) == 10
        assert flows_by_flag(s, [goods]) == {}
        assert flags_in_redis(s, flags) == flags


def test_a_batch_does_not_wait_past_its_patience_for_a_lock_stuck_elsewhere(
    settings: Settings,
) -> None:
    """One goods' lock held by somebody stuck: deductions of other goods in the same process
    are not held up behind it; the stuck one waits alone until its own timeout."""
    configured = settings.with_(deduct_batch_patience=0.1, lock_timeout=3.0)
    assert configured.lock_backend == "zookeeper"  # the test watches its queue
    with running_services(configured) as s:
        deps = s.stock_app.extensions["stock"]
        stuck, free = unique("stuck"), unique("free")
        s.seed(stuck, 5)
        s.seed(free, 5)
        stuck_flag, free_flags = unique("flag"), [unique("flag") for _ in range(3)]
        set_flags(s, stuck_flag, *free_flags)
        with held_by_another_thread(deps.locks, [stuck]), ThreadPoolExecutor(4) as pool:
            waiting = pool.submit(reduce, s, stuck_flag, {stuck: 1})
            # The stuck request is queued in ZooKeeper behind the holder (its flag stays in
            # Redis until its operation is decided).
            queue = deps.locks.path(stuck)
            wait_until(lambda: len(deps.locks.client.get_children(queue)) == 2, 5, "the queue")
            served = list(pool.map(lambda f: reduce(s, f, {free: 1}), free_flags))
            # Served while the stuck one still waits (for its 3 s timeout).
            assert not waiting.done()
            assert [body["outcome"] for _, body in served] == ["deducted"] * 3
            status, body = waiting.result(lock_call_timeout(configured))
        assert (status, body["dependency"]) == (503, "lock")
        assert s.level(stuck) == 5 and s.level(free) == 2
        assert flags_in_redis(s, [stuck_flag]) == [stuck_flag]


class Holder:
    """Holds names on a lock backend from a thread of its own until `release()`."""

    def __init__(self, locks: Any, names: list[str]) -> None:
        self.held, self.done = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._hold, args=(locks, names))
        self.thread.start()
        assert self.held.wait(10), "the holder never got the lock"

    def _hold(self, locks: Any, names: list[str]) -> None:
        with locks.hold(names, timeout=10):
            self.held.set()
            self.done.wait(30)

    def release(self) -> None:
        self.done.set()
        self.thread.join(10)


def test_a_split_batch_answers_what_it_committed_at_once_and_lets_each_wait_its_own_time(
    settings: Settings,
) -> None:
    """Fault 5: in a batch split because one name was still held, the request already
    committed was answered only when the rest gave up (a commit at 0.1 s answered at the lock
    timeout, so the order service's call timed out and retried), and the rest's wait was cut
    to the oldest member's deadline. Here a request for a free goods id and a later one for a
    goods id held elsewhere share a batch: the first is answered as soon as it is committed,
    and the second waits its own full timeout, long enough to get the lock when it is freed."""
    # The times are the point; each margin between them is a second or more (they were half
    # that), for a loaded machine: the early request's deadline at about start + 6 s, the late
    # one's at about start + 8 s, the stuck goods id freed in between, at start + 7 s.
    configured = settings.with_(deduct_batch_patience=0.1, lock_timeout=6.0)
    with running_services(configured) as s:
        deps = s.stock_app.extensions["stock"]
        pilot_goods, free, stuck = unique("pilot"), unique("free"), unique("stuck")
        for goods in (pilot_goods, free, stuck):
            s.seed(goods, 5)
        pilot, early, late = unique("flag"), unique("flag"), unique("flag")
        set_flags(s, pilot, early, late)
        stuck_holder = Holder(deps.locks, [stuck])
        # The pilot's batch holds the lane (paused before its lock claim: once a batch holds
        # its lock the next one forms at once) while the two queue.
        go_on = threading.Event()
        deps.deduction.runner.locks = ClaimAfter(deps.locks, go_on)
        finished: dict[str, float] = {}

        def timed(flag: str, lines: Lines) -> tuple[int, dict[str, Any]]:
            answer = reduce(s, flag, lines)
            finished[flag] = time.monotonic()
            return answer

        with ThreadPoolExecutor(3) as pool:
            start = time.monotonic()
            pilot_answer = pool.submit(timed, pilot, {pilot_goods: 1})
            queued(deps, 0)
            early_answer = pool.submit(timed, early, {free: 1})
            queued(deps, 1)
            time.sleep(2.0)  # the late request arrives two seconds after the early one
            late_answer = pool.submit(timed, late, {stuck: 1})
            queued(deps, 2)
            go_on.set()  # the early and the late request now form one batch
            wait = lock_call_timeout(configured)
            assert pilot_answer.result(wait)[0] == 200
            assert early_answer.result(wait) == (200, early_answer.result()[1])
            # Committed within the patience of the batch, not at the rest's timeout (6 s).
            assert finished[early] - start < 4.0, finished[early] - start
            time.sleep(max(0.0, start + 7.0 - time.monotonic()))
            # Past the early request's deadline (start + 6 s), within the late one's own.
            stuck_holder.release()
            status, body = late_answer.result(wait)
        assert (status, body["outcome"]) == (200, "deducted"), body
        assert (s.level(free), s.level(stuck)) == (4, 4)
