"""The relay of stock events (issue 30): one elected instance publishes the outbox to a Redis
Stream; a standby takes over when it goes; a relay that dies between its XADDs and its mark
sends them again, and a consumer that drops repeats by id gets each event once, in ledger order
per goods id. Real ZooKeeper, Redis and SQLite."""

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

import migrations
from inventory.local.servers import ServerProcess, wait_until
from shared.db import utcnow
from shared.settings import Settings
from stock_service import relay
from stock_service.tables import stock_outbox
from tests.conftest import unique


@pytest.fixture
def relay_settings(
    tmp_path: Path, zk_server: ServerProcess, redis_server: ServerProcess
) -> Settings:
    url = f"sqlite:///{tmp_path / 'stock.db'}"
    migrations.upgrade(url, "stock")
    return Settings(
        stock_database_url=url,
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
