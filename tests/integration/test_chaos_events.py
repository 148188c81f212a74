"""The chaos run's consumer of the stock events (inventory/chaos/stream_consumer.py) on a real
Redis: it reads as a consumer group and keeps going when the group is gone (as after a
failover to a replica that never had it), getting every event of its goods, repeats and all;
and I10 on what a consumer got (inventory/chaos/ledger_checks.py's events_received), against a
real outbox, catches a hand-made lost, duplicated and reordered event."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis as redis_lib
import sqlalchemy as sa

from inventory.chaos import ledger_checks
from inventory.chaos.stream_consumer import StreamConsumer
from inventory.local.servers import ServerProcess, wait_until
from shared.database.engines import utcnow
from stock_service.storage.tables import stock, stock_outbox
from tests.conftest import unique


def event(n: int, goods: str, seq: int, level: int, delta: int = -1) -> dict[str, str]:
    return {
        "id": str(n),
        "goodsId": goods,
        "seq": str(seq),
        "kind": "deducted",
        "delta": str(delta),
        "level": str(level),
    }


def test_the_consumer_gets_every_event_of_its_goods_even_when_its_group_is_lost(
    redis_server: ServerProcess,
) -> None:
    url = f"redis://{redis_server.address}/0"
    stream, prefix = unique("test:events"), unique("run")
    client = redis_lib.Redis.from_url(url, decode_responses=True)
    consumer = StreamConsumer(url, stream, group="chaos-test", prefix=prefix)
    try:
        client.xadd(stream, event(100, prefix + "a", 1, 9))  # before the group: not the run's
        consumer.open()
        consumer.start()
        for n in range(1, 6):
            client.xadd(stream, event(n, prefix + "a", n + 1, 9 - n))
            client.xadd(stream, event(1000 + n, "other-run", n, 0))  # acknowledged, not kept
        assert consumer.wait_for({1, 2, 3, 4, 5}, 10) == set()
        client.xgroup_destroy(stream, "chaos-test")  # a promoted replica without the group
        for n in range(6, 9):
            client.xadd(stream, event(n, prefix + "a", n + 1, 9 - n))
        assert consumer.wait_for(set(range(1, 9)), 10) == set()
        wait_until(lambda: 100 in consumer.ids(), 10, "the stream read again from its start")
        assert consumer.regrouped == 1
        ids = [int(f["id"]) for _, f in consumer.received()]
        assert ids[:5] == [1, 2, 3, 4, 5]  # then the whole stream again: repeats
        assert all(f["goodsId"].startswith(prefix) for _, f in consumer.received())
    finally:
        consumer.stop()
        client.delete(stream)
        client.close()
    assert any("NOGROUP" in e for e in consumer.errors), consumer.errors


def test_entries_read_but_never_received_are_read_again_from_the_pending_list(
    redis_server: ServerProcess,
) -> None:
    """An XREADGROUP whose reply was lost (a reset connection, a primary killed after it
    answered) moved its entries to the consumer's pending list all the same: `>` never gives
    them again, so the consumer reads its pending entries first."""
    url = f"redis://{redis_server.address}/0"
    stream, prefix = unique("test:events"), unique("run")
    client = redis_lib.Redis.from_url(url, decode_responses=True)
    consumer = StreamConsumer(url, stream, group="chaos-test", prefix=prefix)
    try:
        consumer.open()
        for n in range(1, 4):
            client.xadd(stream, event(n, prefix + "a", n, 9 - n))
        # the read whose reply never reached the consumer: delivered to it, never acknowledged
        lost: Any = client.xreadgroup("chaos-test", consumer.name, {stream: ">"})
        assert len(lost[0][1]) == 3
        consumer.start()
        client.xadd(stream, event(4, prefix + "a", 4, 5))
        assert consumer.wait_for({1, 2, 3, 4}, 10) == set()
        assert [int(f["id"]) for _, f in consumer.received()] == [1, 2, 3, 4]
        # each acknowledged: the consumer keeps a batch before it acknowledges it, so the
        # last XACK may land just after wait_for saw the entries
        wait_until(
            lambda: client.xpending(stream, "chaos-test")["pending"] == 0,
            5,
            "every entry acknowledged",
            interval=0.05,
        )
    finally:
        consumer.stop()
        client.delete(stream)
        client.close()


@dataclass
class Feed:
    """What a consumer got, made by hand (the check only reads these)."""

    entries: list[tuple[str, Mapping[str, str]]]
    errors: list[str] = field(default_factory=list)

    def received(self) -> list[tuple[str, Mapping[str, str]]]:
        return self.entries

    def wait_for(self, wanted: set[int], timeout: float) -> set[int]:
        return wanted - {int(f["id"]) for _, f in self.entries}


@pytest.fixture
def outbox(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[sa.Engine, str, list[dict[str, str]]]]:
    """One goods id seeded at 5 and sold three times, its outbox sent, and the events a relay
    made of it, in order; on each backend, since I10 reads the outbox (a LIKE on the prefix,
    ids in order) from the run's database."""
    # Nothing moves this outbox: I10's reads again after a violation (for holds that expire
    # during a run) find the same rows, and need not wait 5 s each.
    monkeypatch.setattr(ledger_checks, "I10_PAUSE", 0.05)
    engine = sa.create_engine(database_url)
    goods = unique("run")
    rows = [(1, 5, "adjusted", 5), (2, -1, "deducted", 4), (3, -1, "deducted", 3)]
    rows.append((4, -1, "deducted", 2))
    now = utcnow()
    with engine.begin() as conn:
        conn.execute(
            sa.insert(stock),
            {
                "goods_id": goods,
                "num": 2,
                "seeded_num": 5,
                "seed_version": 1,
                "updated_at": now,
                "ledger_seq": 4,
            },
        )
        for seq, delta, kind, level in rows:
            conn.execute(
                sa.insert(stock_outbox),
                {
                    "goods_id": goods,
                    "seq": seq,
                    "kind": kind,
                    "delta": delta,
                    "level": level,
                    "created_at": now,
                    "sent_at": now,
                },
            )
        of_goods = sa.select(stock_outbox.c.id).where(stock_outbox.c.goods_id == goods)
        ids = [r.id for r in conn.execute(of_goods.order_by(stock_outbox.c.id))]
    events = [
        {**event(i, goods, seq, level, delta), "kind": kind}
        for i, (seq, delta, kind, level) in zip(ids, rows, strict=True)
    ]
    yield engine, goods, events
    engine.dispose()


def judge(outbox: tuple[sa.Engine, str, list[dict[str, str]]], feed: list[dict[str, str]]) -> str:
    engine, goods, _ = outbox
    got = Feed([(f"{i}-0", fields) for i, fields in enumerate(feed)])
    verdict = ledger_checks.events_received(got, engine, goods)  # type: ignore[arg-type]
    return f"{verdict.verdict}: {verdict.detail}"


def test_i10_passes_what_the_relay_sent_with_its_repeats(outbox: tuple) -> None:
    _, _, events = outbox
    assert judge(outbox, [*events[:3], *events[1:], events[3]]).startswith("valid")


def test_i10_catches_a_lost_event(outbox: tuple) -> None:
    _, _, events = outbox
    assert "1 lost" in judge(outbox, [events[0], events[1], events[3]])


def test_i10_catches_an_event_duplicated_under_another_id(outbox: tuple) -> None:
    _, _, events = outbox
    copy = {**events[2], "id": str(int(events[3]["id"]) + 10)}
    found = judge(outbox, [*events, copy])
    assert found.startswith("violated") and "invented" in found, found


def test_i10_catches_two_events_in_the_wrong_order(outbox: tuple) -> None:
    _, _, events = outbox
    found = judge(outbox, [events[0], events[2], events[1], events[3]])
    assert found.startswith("violated") and "out of order" in found, found
