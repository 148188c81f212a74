"""A dependency that is down: a 503 that names it, no order left PENDING without a reason, and
no sale lost once it is back (the reconciler deducts again an order whose flag is
undecided). Each test has its own ZooKeeper and Redis, since it stops them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis as redis_lib

import order_service
from inventory.local.servers import (
    ServerProcess,
    free_port,
    start_redis,
    start_zookeeper,
    wait_until,
)
from order_service.placing.client import StockClient
from order_service.placing.flags import FlagWriter
from order_service.placing.retry import CallPolicy
from order_service.settling.reconcile import reconcile
from tests.conftest import make_settings, unique
from tests.helpers import Services, running_services


@pytest.fixture
def own_zk(tmp_path: Path) -> Iterator[ServerProcess]:
    server = start_zookeeper(tmp_path / "zk", fsync=False)
    yield server
    server.stop()


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[ServerProcess]:
    server = start_redis(tmp_path / "redis")
    yield server
    server.stop()


def test_redis_down_gives_503_naming_redis_and_the_sale_is_made_once_it_is_back(
    database_url: str, zk_server: ServerProcess, own_redis: ServerProcess, tmp_path: Path
) -> None:
    """No flag could be written, so nothing was deducted: the order stays PENDING (before, it
    FAILED with the stock on the shelf), and once Redis is back the reconciler writes its flag
    and deducts it: no sale lost to a Redis outage the deployment survives."""
    with running_services(make_settings(database_url, zk_server, own_redis)) as s:
        goods, user = unique(), unique("u")
        s.seed(goods, 5)
        own_redis.stop()
        response = s.order.post("/genOrder", json={"userId": user, "goodsIds": [goods]})
        assert (response.status_code, response.json["status"]) == (503, "PENDING")
        assert response.json["dependency"] == "redis"
        [order] = s.orders_of(user)
        assert order["status"] == "PENDING" and "redis_unavailable" in order["reason"]
        stock_answer = s.stock.put(
            f"/reduceStock/{unique('flag')}", json=[{"goodsId": goods, "goodsNum": 1}]
        )
        assert stock_answer.status_code == 503
        assert stock_answer.json["dependency"] == "redis"
        assert s.level(goods) == 5
        back = start_redis(tmp_path / "redis-again", port=own_redis.port)  # the same address
        try:
            report = reconcile_now(s)
        finally:
            back.stop()
        assert order["id"] in report.confirmed, report
        assert s.order.get(f"/orders/{order['id']}").json["status"] == "CONFIRMED"
        assert s.level(goods) == 4


def test_zookeeper_down_gives_503_naming_it_and_the_sale_is_made_once_it_is_back(
    database_url: str, own_zk: ServerProcess, redis_server: ServerProcess, tmp_path: Path
) -> None:
    settings = make_settings(
        database_url, own_zk, redis_server, stock_call_retries=1, lock_timeout=1.0
    )
    with running_services(settings) as s:
        goods, user = unique(), unique("u")
        s.seed(goods, 5)  # connects the stock service's ZooKeeper client
        own_zk.stop()
        flag = unique("flag")
        flags = redis_lib.Redis.from_url(settings.redis_url)
        flags.set(flag, "orderId", ex=60)
        answer = s.stock.put(f"/reduceStock/{flag}", json=[{"goodsId": goods, "goodsNum": 1}])
        assert answer.status_code == 503
        assert answer.json["dependency"] == "zookeeper"
        assert flags.exists(flag) == 1  # nothing committed, so the flag stays for the retry

        response = s.order.post("/genOrder", json={"userId": user, "goodsIds": [goods]})
        assert response.status_code == 503
        assert response.json["dependency"] == "stock service"
        # The flag is undecided (no lock, no deduction): PENDING, not voided (before, it was
        # voided here, and FAILED with the stock on the shelf).
        assert response.json["status"] == "PENDING"
        [order] = s.orders_of(user)
        assert order["status"] == "PENDING" and "zookeeper" in order["reason"]
        assert s.level(goods) == 5
        health = s.stock.get("/healthz")
        assert health.status_code == 503 and health.json["checks"]["lock"] is False
        unhealed = reconcile_now(s)  # ZooKeeper still down: deducted again, still undecided
        assert order["id"] in unhealed.retried
        back = start_zookeeper(tmp_path / "zk", port=own_zk.port, fsync=False)  # its data kept
        try:
            healthy = lambda: s.stock.get("/healthz").status_code == 200  # noqa: E731
            wait_until(healthy, 30, "the stock service's lock service back")
            report = reconcile_now(s)
        finally:
            back.stop()
        assert order["id"] in report.confirmed, report
        assert s.level(goods) == 4


def reconcile_now(s: Services) -> Any:
    """One pass of the reconciler as its service runs it (the flags written again, undecided
    orders deducted again), over every PENDING order however young."""
    transport = httpx.WSGITransport(app=s.stock_app)
    client = redis_lib.Redis.from_url(s.settings.redis_url)
    flags = FlagWriter(client, 60, 2.0)
    try:
        with StockClient("http://stock", CallPolicy(5, 0, 10, 0), transport=transport) as stock:
            store = s.order_app.extensions["orders"].store
            return reconcile(store, stock, timedelta(0), flags=flags, void_after=timedelta(hours=1))
    finally:
        client.close()


def test_stock_service_unreachable_leaves_pending_with_the_reason_recorded(
    database_url: str, zk_server: ServerProcess, redis_server: ServerProcess
) -> None:
    settings = make_settings(
        database_url,
        zk_server,
        redis_server,
        stock_service_url=f"http://127.0.0.1:{free_port()}",
        stock_call_retries=1,
        confirm_backoff=(0.01,),
    )
    app = order_service.create_app(settings)
    try:
        user = unique("u")
        response = app.test_client().post("/genOrder", json={"userId": user, "goodsIds": ["g1"]})
        assert response.status_code == 503
        assert response.json["status"] == "PENDING"
        order = app.test_client().get(f"/orders/{response.json['orderId']}").json
        assert order["status"] == "PENDING"
        assert order["reason"].startswith("outcome_unknown: ConnectError")
    finally:
        app.extensions["orders"].close()
