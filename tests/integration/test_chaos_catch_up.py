"""The chaos run's consumer of the stock events catches up from the stock database when the
stream lost events: a Redis restarted empty under it (the worst a restart of every node can do
when the machine lost the append-only file's last second), its group gone, the events it had
not read yet lost with the stream. After its first read that works again it fetches the run's
events after the outbox's id at its start (GET /stock-events, here a list standing for it) and
keeps those it never had, in id order, before what the stream brings next. Real Redis."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from inventory.chaos.stream_consumer import StreamConsumer
from inventory.local.servers import start_redis, wait_until
from tests.conftest import unique
from tests.integration.test_chaos_events import event


def test_events_a_restarted_redis_lost_are_fetched_from_the_stock_database(
    tmp_path: Path,
) -> None:
    import redis as redis_lib

    server = start_redis(tmp_path / "redis")  # keeps nothing: it comes back empty
    url = f"redis://{server.address}/0"
    stream, prefix = unique("test:events"), unique("run")
    goods = prefix + "a"
    # What the stock database has committed: GET /stock-events answers from it.
    committed = [event(n, goods, n, 10 - n) for n in range(1, 6)] + [event(7, "other", 1, 0)]
    asked: list[int] = []

    def route(after: int) -> Iterator[dict[str, str]]:
        asked.append(after)
        return iter(sorted((e for e in committed if int(e["id"]) > after), key=lambda e: e["id"]))

    consumer = StreamConsumer(url, stream, group="chaos-test", prefix=prefix, catch_up=route)
    client = redis_lib.Redis.from_url(url, decode_responses=True)
    try:
        consumer.open()
        consumer.start()
        for fields in committed[:3]:
            client.xadd(stream, fields)
        assert consumer.wait_for({1, 2, 3}, 10) == set()
        assert asked == []  # no interruption, no catch-up: the stream alone
        # 4 and 5 were committed (and sent): the stream is lost before the consumer read them.
        client.close()
        server.stop()
        server = start_redis(tmp_path / "redis", port=server.port)
        client = redis_lib.Redis.from_url(url, decode_responses=True)
        wait_until(lambda: consumer.caught_up, 20, "the consumer caught up")
        committed.append(event(6, goods, 6, 4))
        client.xadd(stream, committed[-1])  # the stream goes on after the restart
        assert consumer.wait_for({4, 5, 6}, 20) == set()
    finally:
        consumer.stop()
        client.close()
        server.stop()
    ids = [int(f["id"]) for _, f in consumer.received()]
    assert ids == [1, 2, 3, 4, 5, 6]  # 4 and 5 from the route, in order, before 6
    assert consumer.caught_up == [4, 5]
    assert consumer.lost_by_stream() == [4, 5]  # the stream never brought them: Redis lost them
    assert asked and set(asked) == {0}  # from the outbox's id when the consumer opened
    assert any("NOGROUP" in e for e in consumer.errors), consumer.errors
