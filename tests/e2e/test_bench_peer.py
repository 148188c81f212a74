"""The bench's one-database peer (inventory/bench/peer/) is correct before it is compared: under
gunicorn (2 workers x 8 threads, as the bench runs it), on real SQLite and PostgreSQL, many
buyers racing on one goods id sell it out exactly, never more, and each Idempotency-Key deducts
once however often it is sent at the same time."""

from __future__ import annotations

import random
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from inventory.bench.peer import prepare, start_peer
from inventory.bench.peer.store import order_lines, orders, stock, stock_flow
from tests.conftest import PG_ADMIN_URL

pytestmark = pytest.mark.e2e

STOCKED, BUYERS, REPEATS = 50, 120, 2  # each buyer's key sent twice at once


@pytest.fixture(params=["sqlite", "postgresql"])
def peer_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'peer.db'}"
        return
    name = f"inv_test_peer_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE {name}"))
    try:
        yield admin.url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()


def test_racing_buyers_sell_one_goods_id_out_exactly_once_per_key(
    peer_database: str, tmp_path: Path
) -> None:
    hot, other = "peer-hot", "peer-other"
    prepare(peer_database, {hot: STOCKED, other: 10_000})
    peer = start_peer(tmp_path / "peer", peer_database)
    try:
        rng = random.Random(29)
        buyers = []
        for i in range(BUYERS):
            # A third also buy another goods id, their lines in either order in the body: the
            # peer deducts in goods-id order whatever the body's, so no two orders deadlock.
            lines = [{"goodsId": hot, "num": 1}]
            if i % 3 == 0:
                lines.insert(rng.randrange(2), {"goodsId": other, "num": 1})
            buyers.append((f"key-{i}", {"userId": f"buyer-{i}", "items": lines}))
        sends = [buyer for buyer in buyers for _ in range(REPEATS)]
        rng.shuffle(sends)
        local = threading.local()

        def send(key_body: tuple[str, dict[str, Any]]) -> tuple[str, int, dict[str, Any]]:
            if not hasattr(local, "client"):
                local.client = httpx.Client(base_url=peer.url, timeout=60)
            key, body = key_body
            response = local.client.post("/genOrder", json=body, headers={"Idempotency-Key": key})
            return key, response.status_code, response.json()

        with ThreadPoolExecutor(32) as pool:
            answers = list(pool.map(send, sends))

        by_key: dict[str, set[tuple[int, str, str]]] = {}
        for key, status, body in answers:
            assert status in (200, 409), body
            by_key.setdefault(key, set()).add((status, body["orderId"], body["status"]))
        # Both sends of a key answered the same order, with the same outcome.
        assert all(len(outcomes) == 1 for outcomes in by_key.values()), by_key
        outcomes = Counter(next(iter(o))[2] for o in by_key.values())
        assert outcomes == {"CONFIRMED": STOCKED, "FAILED": BUYERS - STOCKED}
        for _, status, body in answers:
            if status == 409:
                assert body["reason"] == "insufficient_stock"

        engine = sa.create_engine(peer_database)
        try:
            with engine.connect() as conn:
                levels = dict(conn.execute(sa.select(stock.c.goods_id, stock.c.num)).all())
                flows = conn.execute(
                    sa.select(stock_flow.c.order_id, stock_flow.c.goods_id, stock_flow.c.num)
                ).all()
                placed = conn.execute(
                    sa.select(orders.c.id, orders.c.idempotency_key, orders.c.status)
                ).all()
                lines_count = conn.execute(sa.select(sa.func.count()).select_from(order_lines))
                line_rows = lines_count.scalar_one()
        finally:
            engine.dispose()
        # Sold out exactly: never below zero, every unit accounted for by one flow row.
        assert levels[hot] == 0
        hot_flows = [f for f in flows if f.goods_id == hot]
        assert sum(f.num for f in hot_flows) == STOCKED
        assert levels[other] + sum(f.num for f in flows if f.goods_id == other) == 10_000
        # One order per key, and the confirmed ones are exactly those with flows, once each.
        assert sorted(p.idempotency_key for p in placed) == sorted(k for k, _ in buyers)
        confirmed = {p.id for p in placed if p.status == "CONFIRMED"}
        assert Counter(f.order_id for f in hot_flows) == dict.fromkeys(confirmed, 1)
        answered = {next(iter(o))[1] for o in by_key.values() if next(iter(o))[2] == "CONFIRMED"}
        assert answered == confirmed
        assert line_rows == sum(len(body["items"]) for _, body in buyers)

        # A key sent again later answers its first order; with another body, 422.
        key, body = buyers[0]
        again = httpx.post(
            f"{peer.url}/genOrder", json=body, headers={"Idempotency-Key": key}, timeout=30
        )
        assert (again.json()["orderId"], again.headers["Idempotent-Replayed"]) == (
            next(iter(by_key[key]))[1],
            "true",
        )
        other_body = {"userId": "someone-else", "goodsIds": [other]}
        reused = httpx.post(
            f"{peer.url}/genOrder", json=other_body, headers={"Idempotency-Key": key}, timeout=30
        )
        assert reused.status_code == 422
    finally:
        peer.stop()
