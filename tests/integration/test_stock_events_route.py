"""GET /stock-events: the outbox read after an id, in pages, each event as the stream has it, so
a consumer fetches what a Redis without its data lost. Real services on each SQL database;
the relay's own round publishes the same rows to a real Redis, to compare the two shapes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
import redis as redis_lib

from shared.config.settings import Settings
from stock_service.ledger.relay import publish_pending
from tests.conftest import ADMIN, unique
from tests.helpers import Services, running_services


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(replace(settings, stock_events_stream=unique("test:route"))) as s:
        yield s


def page(s: Services, after: int, limit: int) -> Any:
    answer = s.stock.get(f"/stock-events?after={after}&limit={limit}")
    assert answer.status_code == 200, answer.json
    return answer.json


def test_a_consumer_pages_through_every_event_in_ledger_order(services: Services) -> None:
    start = page(services, 0, 1)["last"]  # from now on
    one, two = unique("ev"), unique("ev")
    services.seed(one, 5)
    services.seed(two, 1)
    for goods, delta in ((one, 3), (two, -1), (one, -2)):
        made = services.stock.post(
            f"/stock/{goods}/adjustments",
            json={"delta": delta, "reason": "correction"},
            headers=ADMIN,
        )
        assert made.status_code == 201, made.json
    events, after = [], start
    while batch := page(services, after, 2):
        events += batch["events"]
        assert batch["next"] == (int(batch["events"][-1]["id"]) if batch["events"] else after)
        if not batch["events"]:
            break
        after = batch["next"]
    mine = [e for e in events if e["goodsId"] in (one, two)]
    # two's level fell to 0: an out_of_stock event beside its entry
    assert [(e["goodsId"], e["seq"], e["kind"]) for e in mine] == [
        (one, "1", "adjusted"),
        (two, "1", "adjusted"),
        (one, "2", "adjusted"),
        (two, "2", "adjusted"),
        (two, "2", "out_of_stock"),
        (one, "3", "adjusted"),
    ]
    assert [e["level"] for e in mine] == ["5", "1", "8", "0", "0", "6"]
    ids = [int(e["id"]) for e in events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert page(services, after, 10)["last"] >= ids[-1]


def test_the_route_answers_what_the_stream_has(services: Services) -> None:
    settings = services.settings
    start = page(services, 0, 1)["last"]
    goods = unique("ev")
    services.seed(goods, 2)
    client = redis_lib.Redis.from_url(settings.redis_url, decode_responses=True)
    try:
        while publish_pending(
            services.engine, client, settings.stock_events_stream, settings.stock_events_maxlen
        ):
            pass
        entries: Any = client.xrange(settings.stock_events_stream)
    finally:
        client.close()
    streamed = {f["id"]: f for _id, f in entries if f["goodsId"] == goods}
    fetched = {e["id"]: e for e in page(services, start, 1000)["events"] if e["goodsId"] == goods}
    assert streamed and fetched == streamed


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("after=-1", "after"),
        ("after=x", "after"),
        (f"after={2**63}", "after"),
        ("limit=0", "limit"),
        ("limit=1001", "limit"),
        ("limit=ten", "limit"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(services: Services, query: str, field: str) -> None:
    answer = services.stock.get(f"/stock-events?{query}")
    assert answer.status_code == 400
    assert answer.json["field"] == field, answer.json
