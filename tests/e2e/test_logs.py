"""LOG_FORMAT=json on a real stack: every line is a JSON object (gunicorn's own included), and
one order's journey carries the same request id, order id and flag in both services' logs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest

from inventory.local import stack
from inventory.local.client import lock_call_timeout, order_call_timeout, stack_settings
from inventory.local.servers import ServerProcess

pytestmark = pytest.mark.e2e


def json_lines(path: Path) -> list[dict[str, object]]:
    lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    return [json.loads(line) for line in lines]  # fails the test on a line that is not JSON


def test_one_orders_journey_carries_one_request_id_through_both_services(
    tmp_path: Path, zk_server: ServerProcess, redis_server: ServerProcess
) -> None:
    env = {
        "ZK_HOSTS": zk_server.address,
        "REDIS_URL": f"redis://{redis_server.address}/0",
        "LOG_FORMAT": "json",
    }
    state = stack.up(home=tmp_path, extra_env=env, say=lambda *_: None)
    settings = stack_settings(state, {**os.environ, **env})
    try:
        httpx.put(
            f"{state.stock_url}/stock/log-phone",
            json={"num": 3},
            headers=state.admin_headers(),
            timeout=lock_call_timeout(settings),  # the seed takes the goods id's lock
        ).raise_for_status()
        answer = httpx.post(
            f"{state.order_url}/genOrder",
            json={"userId": "logan", "goodsIds": ["log-phone"]},
            headers={"X-Request-Id": "journey-42"},
            timeout=order_call_timeout(settings),
        )
        assert answer.status_code == 200, answer.text
        assert answer.headers["X-Request-Id"] == "journey-42"
        order_id = answer.json()["orderId"]
    finally:
        stack.down(home=tmp_path, say=lambda *_: None)
    for service in ("order_service", "stock_service"):
        lines = json_lines(tmp_path / f"{service}.log")
        assert any(line.get("logger") == "gunicorn.error" for line in lines)  # gunicorn's own
        journey = [line for line in lines if line.get("request_id") == "journey-42"]
        assert journey, f"{service}: no line with the request id"
        for line in journey:
            assert line["order_id"] == order_id and line["flag"] == order_id, line
            assert {"asctime", "level", "logger", "message"} <= set(line)
    order_lines = [line["message"] for line in json_lines(tmp_path / "order_service.log")]
    assert any("CONFIRMED" in str(m) for m in order_lines)
