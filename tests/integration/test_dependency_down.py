"""A dependency that is down: a 503 that names it, and no order left PENDING without a reason.
Each test has its own ZooKeeper and Redis, since it stops them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis as redis_lib

import order_service
from inventory.local.servers import ServerProcess, free_port, start_redis, start_zookeeper
from tests.conftest import make_settings, unique
from tests.helpers import running_services


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


def test_redis_down_gives_503_naming_redis_and_a_failed_order_with_reason(
    database_url: str, zk_server: ServerProcess, own_redis: ServerProcess
) -> None:
    with running_services(make_settings(database_url, zk_server, own_redis)) as s:
        goods, user = unique(), unique("u")
        s.seed(goods, 5)
        own_redis.stop()
        response = s.order.post("/genOrder", json={"userId": user, "goodsIds": [goods]})
        assert response.status_code == 503
        assert response.json["dependency"] == "redis"
        assert [(o["status"], o["reason"]) for o in s.orders_of(user)] == [
            ("FAILED", "redis_unavailable")
        ]
        stock_answer = s.stock.put(
            f"/reduceStock/{unique('flag')}", json=[{"goodsId": goods, "goodsNum": 1}]
        )
        assert stock_answer.status_code == 503
        assert stock_answer.json["dependency"] == "redis"
        assert s.level(goods) == 5


def test_zookeeper_down_gives_503_naming_it_and_keeps_the_flag_for_a_retry(
    database_url: str, own_zk: ServerProcess, redis_server: ServerProcess
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
        # The flag was voided (that needs no lock): FAILED for good, and the answer says so.
        assert response.json["status"] == "FAILED"
        [order] = s.orders_of(user)
        assert order["status"] == "FAILED"
        assert order["reason"].startswith("voided") and "zookeeper" in order["reason"]
        assert s.level(goods) == 5
        health = s.stock.get("/healthz")
        assert health.status_code == 503 and health.json["checks"]["lock"] is False


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
