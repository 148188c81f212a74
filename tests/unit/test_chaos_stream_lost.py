"""What the chaos run's consumer of the stock events counts as lost by the stream: an event it
first fetched from the stock database (after an interruption) and the stream never brought
after. The relays publish again what Redis did not have when it came back, so most of what a
catch-up fetches arrives by the stream later, as a repeat: that is no loss."""

from __future__ import annotations

from inventory.chaos.stream_consumer import StreamConsumer


def consumer(entries: list[tuple[str, dict[str, str]]], caught_up: list[int]) -> StreamConsumer:
    got = StreamConsumer("redis://unused", "stream", "group", "run-", make_client=lambda u: None)  # type: ignore[arg-type,return-value]
    got.entries.extend(entries)
    got.caught_up.extend(caught_up)
    return got


def test_caught_up_events_the_stream_brought_later_are_not_lost() -> None:
    got = consumer(
        [
            ("1-0", {"id": "1"}),
            ("route-2", {"id": "2"}),
            ("route-3", {"id": "3"}),
            ("9-0", {"id": "3"}),  # 3 came by the stream after the catch-up
        ],
        caught_up=[2, 3],
    )
    assert got.lost_by_stream() == [2]


def test_nothing_caught_up_nothing_lost() -> None:
    assert consumer([("1-0", {"id": "1"})], caught_up=[]).lost_by_stream() == []
