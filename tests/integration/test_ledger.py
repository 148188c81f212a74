"""Stock as a ledger: adjustments with reasons, a goods id's history with the level
after each entry, units held by unpaid holds, low-stock thresholds, and the outbox of stock
events relayed to a Redis Stream. Real ZooKeeper, Redis and each SQL database."""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest
import redis as redis_lib
import sqlalchemy as sa

from shared.config.settings import Settings
from shared.database.engines import utcnow
from stock_service.ledger.relay import publish_pending
from stock_service.storage.tables import stock_adjustment, stock_flow, stock_outbox, stock_return
from tests.conftest import ADMIN, unique
from tests.helpers import Services, running_services


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings) as s:
        yield s


def adjust(s: Services, goods: str, headers: dict[str, str] = ADMIN, **body: Any) -> Any:
    return s.stock.post(f"/stock/{goods}/adjustments", json=body, headers=headers)


def place(s: Services, lines: dict[str, int], **extra: Any) -> Any:
    items = [{"goodsId": g, "num": n} for g, n in lines.items()]
    body = {"userId": unique("u"), "items": items, **extra}
    return s.order_app.test_client().post("/genOrder", json=body)


def totals(s: Services, goods: str) -> dict[str, int]:
    """The sums the ledger's invariant relates, for one goods id."""
    with s.engine.connect() as conn:

        def total(table: sa.Table, column: str) -> int:
            query = sa.select(sa.func.coalesce(sa.func.sum(table.c[column]), 0))
            return int(conn.execute(query.where(table.c.goods_id == goods)).scalar_one())

        return {
            "adjustments": total(stock_adjustment, "delta"),
            "flows": total(stock_flow, "num"),
            "returns": total(stock_return, "num"),
        }


def test_adjustments_with_reasons_make_entries_and_nothing_is_overwritten(
    services: Services,
) -> None:
    s = services
    goods = unique()
    s.seed(goods, 10)  # an adjustment of reason set
    restocked = adjust(s, goods, delta=5, reason="restock", reference="delivery 42")
    assert restocked.status_code == 201, restocked.json
    assert restocked.json["num"] == 15
    entry = restocked.json["entry"]
    assert entry.pop("time")
    assert entry == {
        "seq": 2,
        "kind": "adjusted",
        "delta": 5,
        "levelAfter": 15,
        "reason": "restock",
        "reference": "delivery 42",
    }
    assert adjust(s, goods, delta=-2, reason="damaged").json["num"] == 13
    counted = adjust(s, goods, expected=13, num=12, reason="count")
    assert (counted.status_code, counted.json["entry"]["delta"]) == (201, -1)
    sold = place(s, {goods: 3})
    assert sold.status_code == 200
    s.order.post(f"/orders/{sold.json['orderId']}/cancel")
    assert s.level(goods) == 12
    t = totals(s, goods)
    assert t["adjustments"] - s.level(goods) == t["flows"] - t["returns"]  # for all time
    assert t == {"adjustments": 12, "flows": 3, "returns": 3}


def test_each_bad_adjustment_is_refused_with_its_own_answer_and_writes_nothing(
    services: Services,
) -> None:
    s = services
    goods = unique()
    s.seed(goods, 4)
    stale = adjust(s, goods, expected=5, num=9, reason="count")
    assert (stale.status_code, stale.json["num"]) == (409, 4), stale.json
    below = adjust(s, goods, delta=-5, reason="damaged")
    assert (below.status_code, below.json["num"]) == (409, 4), below.json
    reason = adjust(s, goods, delta=1, reason="found it")
    assert (reason.status_code, reason.json["field"]) == (422, "reason"), reason.json
    assert adjust(s, unique("nowhere"), delta=1, reason="restock").status_code == 404
    assert adjust(s, goods, headers={}, delta=1, reason="restock").status_code == 401
    both = adjust(s, goods, delta=1, num=2, reason="correction")
    assert both.status_code == 400, both.json
    assert adjust(s, goods, expected=4, delta=1, reason="count").status_code == 422
    assert s.level(goods) == 4
    assert totals(s, goods)["adjustments"] == 4  # the seed only


def test_history_pages_newest_first_with_the_level_after_each_entry_and_the_level_then(
    services: Services,
) -> None:
    s = services
    goods = unique()
    s.seed(goods, 5)
    before_sale = utcnow()
    time.sleep(0.01)
    sold = place(s, {goods: 2}).json["orderId"]
    adjust(s, goods, delta=3, reason="restock")
    s.order.post(f"/orders/{sold}/cancel")
    first = s.stock.get(f"/stock/{goods}/history?limit=3").json
    assert [(e["seq"], e["kind"], e["delta"], e["levelAfter"]) for e in first["entries"]] == [
        (4, "returned", 2, 8),
        (3, "adjusted", 3, 6),
        (2, "deducted", -2, 3),
    ]
    assert first["entries"][0]["flag"] == sold and first["entries"][1]["reason"] == "restock"
    rest = s.stock.get(f"/stock/{goods}/history?limit=3&before={first['next']}").json
    assert [(e["seq"], e["kind"], e["levelAfter"]) for e in rest["entries"]] == [(1, "adjusted", 5)]
    assert rest["next"] is None
    then = s.stock.get(f"/stock/{goods}/history", query_string={"at": before_sale.isoformat()}).json
    assert then["num"] == 5
    assert s.stock.get(f"/stock/{unique('nowhere')}/history").status_code == 404
    # A page past any seq the column can hold is bad input, not a 500 (SQLite's driver cannot
    # bind it; Schemathesis found it).
    huge = s.stock.get(f"/stock/{goods}/history?before={2**63}")
    assert (huge.status_code, huge.json["field"]) == (400, "before"), huge.json
    last = s.stock.get(f"/stock/{goods}/history?before={2**63 - 1}").json
    assert [e["seq"] for e in last["entries"]] == [4, 3, 2, 1]
    # Shaped as a time but none: a 13th month, or one whose offset puts it before year 1 in
    # UTC (a 500 Schemathesis found); each a 422 naming `at`.
    for at in ("2026-13-01T00:00:00", "0001-01-01T00:00:04+00:01", "9999-12-31T23:59:00-00:01"):
        bad = s.stock.get(f"/stock/{goods}/history", query_string={"at": at})
        assert (bad.status_code, bad.json["field"]) == (422, "at"), (at, bad.json)


def test_a_hold_s_units_are_held_until_paid_and_not_after_its_stock_came_back(
    services: Services,
) -> None:
    s = services
    goods = unique()
    s.seed(goods, 10)
    paid = place(s, {goods: 2}, payWithinSeconds=600).json["orderId"]
    dropped = place(s, {goods: 3}, payWithinSeconds=600).json["orderId"]
    assert s.stock.get(f"/stock/{goods}").json["held"] == 5
    assert s.order.post(f"/orders/{paid}/pay").status_code == 200
    assert s.stock.get(f"/stock/{goods}").json["held"] == 3
    s.order.post(f"/orders/{dropped}/cancel")
    level = s.stock.get(f"/stock/{goods}").json
    assert (level["held"], level["num"]) == (0, 8)
    again = s.stock.put(f"/holds/{paid}/release").json
    assert again == {"flag": paid, "released": False}  # nothing left to release


def outbox(s: Services, goods: str) -> list[tuple[int, str, int, int]]:
    with s.engine.connect() as conn:
        rows = conn.execute(
            sa.select(stock_outbox).where(stock_outbox.c.goods_id == goods).order_by("id")
        )
        return [(r.seq, r.kind, r.delta, r.level) for r in rows]


def test_every_entry_and_threshold_crossing_is_an_outbox_row_of_its_commit(
    services: Services,
) -> None:
    s = services
    goods = unique()
    s.seed(goods, 3)
    set_threshold = s.stock.put(f"/stock/{goods}/threshold", json={"lowStock": 2}, headers=ADMIN)
    assert set_threshold.json == {"goodsId": goods, "lowStock": 2}
    place(s, {goods: 2})
    place(s, {goods: 1})
    adjust(s, goods, delta=4, reason="restock")
    assert outbox(s, goods) == [
        (1, "adjusted", 3, 3),
        (2, "deducted", -2, 1),
        (2, "low_stock", 0, 1),
        (3, "deducted", -1, 0),
        (3, "out_of_stock", 0, 0),
        (4, "adjusted", 4, 4),
        (4, "back_in_stock", 0, 4),
    ]


def test_without_stock_events_no_outbox_row_is_written(settings: Settings) -> None:
    with running_services(settings.with_(stock_events=False)) as s:
        goods = unique()
        s.seed(goods, 3)
        place(s, {goods: 1})
        assert outbox(s, goods) == [] and s.level(goods) == 2


def test_the_relay_publishes_each_row_once_in_order_and_marks_it_sent(
    services: Services,
) -> None:
    s = services
    goods = unique()
    s.seed(goods, 5)
    place(s, {goods: 2})
    stream = f"test:events:{uuid.uuid4().hex[:8]}"
    client = redis_lib.Redis.from_url(s.settings.redis_url, decode_responses=True)
    engine = sa.create_engine(s.settings.stock_database_url)
    try:
        while publish_pending(engine, client, stream, 10_000):  # every unsent row, all tests'
            pass
        mine = [f for _, f in client.xrange(stream) if f["goodsId"] == goods]
        assert [(f["seq"], f["kind"], f["level"]) for f in mine] == [
            ("1", "adjusted", "5"),
            ("2", "deducted", "3"),
        ]
        assert mine[1]["flag"] and mine[0]["reason"] == "set"
        assert publish_pending(engine, client, stream, 10_000) == 0  # marked sent
    finally:
        client.delete(stream)
        client.close()
        engine.dispose()


def test_adjustments_racing_deductions_keep_the_ledger_whole(services: Services) -> None:
    """Restocks, losses and orders at once, combined in the same holds: every entry's level
    follows from the one before, and adjustments - level = flows - returns."""
    s = services
    goods = unique()
    s.seed(goods, 20)
    start = threading.Barrier(30)

    def act(i: int) -> int:
        start.wait()
        if i % 3 == 0:
            return int(adjust(s, goods, delta=2, reason="restock").status_code)
        if i % 5 == 1:
            return int(adjust(s, goods, delta=-1, reason="damaged").status_code)
        return int(place(s, {goods: 1}).status_code)

    with ThreadPoolExecutor(30) as pool:
        codes = list(pool.map(act, range(30)))
    assert set(codes) <= {200, 201, 409}, codes
    t = totals(s, goods)
    assert t["adjustments"] - s.level(goods) == t["flows"] - t["returns"]
    entries = s.stock.get(f"/stock/{goods}/history?limit=500").json["entries"][::-1]
    assert [e["seq"] for e in entries] == list(range(1, len(entries) + 1))
    for before, after in itertools.pairwise(entries):
        assert after["levelAfter"] == before["levelAfter"] + after["delta"], (before, after)
    assert entries[-1]["levelAfter"] == s.level(goods) >= 0


def test_a_pay_whose_release_got_no_answer_is_released_by_the_reconciler(
    settings: Settings,
) -> None:
    import httpx

    from order_service.placing.client import StockClient
    from order_service.placing.retry import CallPolicy
    from order_service.settling.reconcile import HOLD_RELEASE_AGE, reconcile

    class NoReleases(httpx.BaseTransport):
        def __init__(self, inner: httpx.BaseTransport) -> None:
            self.inner = inner

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            if request.url.path.startswith("/holds/"):
                raise httpx.ConnectError("cut", request=request)
            return self.inner.handle_request(request)

    with running_services(settings, wrap_transport=NoReleases) as s:
        goods = unique()
        s.seed(goods, 5)
        held = place(s, {goods: 2}, payWithinSeconds=600).json["orderId"]
        assert s.order.post(f"/orders/{held}/pay").status_code == 200  # paid all the same
        assert s.stock.get(f"/stock/{goods}").json["held"] == 2  # the release got no answer
        transport = httpx.WSGITransport(app=s.stock_app)
        later = utcnow() + HOLD_RELEASE_AGE + timedelta(seconds=1)
        with StockClient("http://stock", CallPolicy(5, 0, 10, 0), transport=transport) as stock:
            store = s.order_app.extensions["orders"].store
            report = reconcile(store, stock, timedelta(hours=1), now=later)
        assert held in report.released
        assert s.stock.get(f"/stock/{goods}").json["held"] == 0
        assert store.hold_releases(later, 10) == []  # nothing left to tell
