"""The relay of stock events: one elected instance publishes the outbox to a Redis
Stream; a standby takes over when it goes; a relay that dies between its XADDs and its mark
sends them again, and a consumer that drops repeats by id gets each event once, in ledger order
per goods id. Real ZooKeeper and Redis, on SQLite, PostgreSQL and MariaDB (the relay's reads
are read-only transactions, its marks an UPDATE of a list of ids)."""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib
import sqlalchemy as sa

from inventory.local.servers import ServerProcess, wait_until
from shared.config.settings import Settings
from shared.database.engines import utcnow
from stock_service.ledger import relay
from stock_service.storage.tables import stock_outbox
from tests.conftest import BACKENDS, unique
from tests.fresh_database import fresh_database


@pytest.fixture(scope="module", params=BACKENDS)
def database_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """This module's own stock database on each backend, in place of the session's: a relay
    sends every unsent row of its database, and the session's holds the other tests' rows."""
    yield from fresh_database(request.param, tmp_path_factory.mktemp("relay"), "stock")


@pytest.fixture
def relay_settings(
    database_url: str, zk_server: ServerProcess, redis_server: ServerProcess
) -> Settings:
    # A row an earlier test left unsent (a relay stopped between its XADDs and its mark) is
    # not this test's to count.
    engine = sa.create_engine(database_url)
    with engine.begin() as conn:
        conn.execute(
            sa.update(stock_outbox).where(stock_outbox.c.sent_at.is_(None)).values(sent_at=utcnow())
        )
    engine.dispose()
    return Settings(
        stock_database_url=database_url,
        zk_hosts=zk_server.address,
        redis_url=f"redis://{redis_server.address}/0",
        zk_session_timeout=3.0,
        stock_events_stream=f"test:relay:{uuid.uuid4().hex[:8]}",
    )


def write_events(url: str, goods: str, first_seq: int, count: int) -> None:
    """Outbox rows as a ledger's commits write them: one goods id, seq after seq."""
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(
            sa.insert(stock_outbox),
            [
                {
                    "goods_id": goods,
                    "seq": seq,
                    "kind": "deducted",
                    "delta": -1,
                    "level": 1000 - seq,
                    "flag": f"f{seq}",
                    "reason": None,
                    "created_at": utcnow(),
                }
                for seq in range(first_seq, first_seq + count)
            ],
        )
    engine.dispose()


def stream(settings: Settings) -> list[dict[str, str]]:
    client = redis_lib.Redis.from_url(settings.redis_url, decode_responses=True)
    try:
        entries: Any = client.xrange(settings.stock_events_stream)
        return [fields for _id, fields in entries]
    finally:
        client.close()


def once_in_order(events: list[dict[str, str]], goods: str) -> list[int]:
    """What a consumer that drops repeats by id sees of one goods id: its seqs."""
    seen: set[str] = set()
    seqs = []
    for event in events:
        if event["goodsId"] == goods and event["id"] not in seen:
            seen.add(event["id"])
            seqs.append(int(event["seq"]))
    return seqs


class Relays:
    def __init__(self, settings: Settings, names: list[str]) -> None:
        self.stops = {name: threading.Event() for name in names}
        self.threads = {
            name: threading.Thread(target=relay.serve, args=(settings, name, stop), daemon=True)
            for name, stop in self.stops.items()
        }
        for thread in self.threads.values():
            thread.start()

    def stop(self, name: str) -> None:
        self.stops[name].set()
        self.threads[name].join(15)


@pytest.fixture
def relays(relay_settings: Settings) -> Iterator[Any]:
    made: list[Relays] = []

    def start(names: list[str]) -> Relays:
        made.append(Relays(relay_settings, names))
        return made[-1]

    yield start
    for group in made:
        for name in group.stops:
            group.stop(name)


def leaders(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage().split()[0] for r in caplog.records if " elected " in r.getMessage()]


def test_one_relay_publishes_and_a_standby_takes_over_when_it_goes(
    relay_settings: Settings, relays: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="relay")
    goods = unique()
    write_events(relay_settings.stock_database_url, goods, 1, 30)
    group = relays([unique("rel1"), unique("rel2")])
    wait_until(lambda: len(once_in_order(stream(relay_settings), goods)) == 30, 20, "30 events")
    [first] = leaders(caplog)  # exactly one was elected
    group.stop(first)  # it resigns on the way out
    write_events(relay_settings.stock_database_url, goods, 31, 20)
    wait_until(lambda: len(once_in_order(stream(relay_settings), goods)) == 50, 20, "50 events")
    assert len(leaders(caplog)) == 2 and leaders(caplog)[1] != first
    assert once_in_order(stream(relay_settings), goods) == list(range(1, 51))


def test_a_relay_that_dies_before_marking_sends_again_and_the_consumer_sees_each_once(
    relay_settings: Settings,
) -> None:
    goods = unique()
    write_events(relay_settings.stock_database_url, goods, 1, 10)
    engine = sa.create_engine(relay_settings.stock_database_url)
    client = redis_lib.Redis.from_url(relay_settings.redis_url, decode_responses=True)
    stream_name, maxlen = relay_settings.stock_events_stream, relay_settings.stock_events_maxlen
    original = relay.MARK_SENT
    try:
        # The mark fails (as a relay killed there would not mark): after its XADDs.
        relay.MARK_SENT = sa.text("UPDATE no_such_table SET x = :at")  # type: ignore[assignment]
        with pytest.raises(sa.exc.DBAPIError):
            relay.publish_pending(engine, client, stream_name, maxlen)
        relay.MARK_SENT = original
        assert relay.publish_pending(engine, client, stream_name, maxlen) == 10  # sent again
        assert relay.publish_pending(engine, client, stream_name, maxlen) == 0
    finally:
        relay.MARK_SENT = original
        client.close()
        engine.dispose()
    events = stream(relay_settings)
    assert len([e for e in events if e["goodsId"] == goods]) == 20  # every one twice
    assert once_in_order(events, goods) == list(range(1, 11))


# SQLite alone: Redis's replication is under test; the mark's UPDATE is tested above on all three
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_events_are_marked_sent_only_once_a_replica_has_them(
    relay_settings: Settings, tmp_path: Path
) -> None:
    """Redis replicates asynchronously: a primary that dies just after a round's XADDs takes
    them with it, and the sentinels promote a replica without them. With a replica asked for
    (STOCK_EVENTS_MIN_REPLICAS, the cluster's 1), a round whose events no replica took leaves
    its rows unsent, to be sent again; once a replica is linked, they are marked."""
    from inventory.local.servers import free_port, redis_argv, start_redis, start_server

    primary = start_redis(tmp_path / "primary")
    replica = None
    engine = sa.create_engine(relay_settings.stock_database_url)
    client = redis_lib.Redis.from_url(f"redis://{primary.address}/0", decode_responses=True)
    name, maxlen = relay_settings.stock_events_stream, relay_settings.stock_events_maxlen
    goods = unique()
    try:
        write_events(relay_settings.stock_database_url, goods, 1, 5)
        with pytest.raises(relay.NotReplicated, match="wait: 0 of 1 replicas there"):
            relay.publish_pending(engine, client, name, maxlen, min_replicas=1)
        assert client.xlen(name) == 0  # no replica at all: nothing sent, the rows wait
        with engine.connect() as conn:
            unsent = conn.execute(
                sa.select(sa.func.count())
                .select_from(stock_outbox)
                .where(stock_outbox.c.goods_id == goods, stock_outbox.c.sent_at.is_(None))
            ).scalar_one()
        assert unsent == 5  # on the primary alone: not sent, as far as the relay knows
        port = free_port()
        folder = tmp_path / "replica"
        folder.mkdir()
        argv = [*redis_argv(folder, port), "--replicaof", "127.0.0.1", str(primary.port)]
        replica = start_server("redis", argv, port, folder, lambda: True, 20)
        wait_until(
            lambda: (client.info("replication").get("slave0") or {}).get("state") == "online",
            20,
            "a replica in sync",
        )
        # A replica that stops taking writes (paused) after the round's look: the events reach
        # the primary, the WAIT after them finds no replica with them, the rows stay unsent.
        replica.pause()
        try:
            with pytest.raises(relay.NotReplicated, match="0 of 1 replicas had them"):
                relay.publish_pending(engine, client, name, maxlen, limit=100, min_replicas=1)
        finally:
            replica.resume()
        # the resumed replica acknowledges the round it missed (the next round's look asks so)
        wait_until(lambda: client.wait(1, 100) >= 1, 20, "the replica caught up")
        while relay.publish_pending(engine, client, name, maxlen, min_replicas=1):
            pass
        assert relay.publish_pending(engine, client, name, maxlen, min_replicas=1) == 0
        entries: Any = client.xrange(name)
        seqs = [int(f["seq"]) for _id, f in entries if f["goodsId"] == goods]
        assert seqs == [1, 2, 3, 4, 5, 1, 2, 3, 4, 5]  # the unreplicated round's, then again
        copied = redis_lib.Redis(port=port, decode_responses=True)
        try:
            replicated: Any = copied.xrange(name)
            assert len(replicated) == len(entries)  # what was marked, the replica has
        finally:
            copied.close()
    finally:
        client.close()
        engine.dispose()
        if replica is not None:
            replica.stop()
        primary.stop()
