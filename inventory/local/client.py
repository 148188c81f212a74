"""A small HTTP client of both services, as any user of the stack would write one, and how long
a client should wait for a call that can meet a lock wait, derived from the stack's settings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from inventory.local.stack_state import StackState
from shared.config.settings import Settings

# What a client allows beyond a call's own legitimate wait: a loaded machine's scheduling,
# the database write after the lock, a request queued behind others in gunicorn.
SLACK = 10.0


def stack_settings(state: StackState, environ: Mapping[str, str]) -> Settings:
    """The settings the stack's services run with: `environ` is the environment `up` was given
    (for `inventory up`, the command's own), overridden by what it recorded, as `up` does."""
    return Settings.from_env({**environ, **state.env()})


def lock_call_timeout(settings: Settings) -> float:
    """How long to wait for a call that takes a lock: PUT /stock (the seed), PUT /reduceStock,
    /voidFlag, /returnStock. The lock's wait, LOCK_TIMEOUT, covers a ZooKeeper reconnection (a
    claim waits for the connection within its deadline) and a worker's first connection; but
    a ZooKeeper request in flight when the connection stalls fails only at kazoo's read
    timeout (two thirds of the session timeout), which can end past the lock's deadline."""
    return settings.lock_timeout + settings.zk_session_timeout * 2 / 3 + SLACK


def order_call_timeout(settings: Settings) -> float:
    """How long to wait for POST /genOrder, whose path may take the whole of what the order
    service allows itself: its wait in its process's queue of orders (order_service/
    batching.py: STOCK_CALL_BUDGET at most), then one request's budget once its order is
    written (Settings.request_budget: the flag writes, the stock calls, the polls, the void)."""
    return settings.stock_call_budget + settings.request_budget() + SLACK


class StackClient:
    def __init__(self, state: StackState, timeout: float = 60.0) -> None:
        self.state = state
        # No kept-alive connections: fault demos stop and kill workers under them.
        fresh = httpx.Limits(max_keepalive_connections=0)
        self.order = httpx.Client(base_url=state.order_url, timeout=timeout, limits=fresh)
        self.stock = httpx.Client(
            base_url=state.stock_url,
            timeout=timeout,
            limits=fresh,
            headers=state.admin_headers(),  # PUT /stock is an admin route
        )

    def seed(self, goods_id: str, num: int) -> dict[str, Any]:
        response = self.stock.put(f"/stock/{goods_id}", json={"num": num})
        response.raise_for_status()
        return dict(response.json())

    def level(self, goods_id: str) -> int | None:
        response = self.stock.get(f"/stock/{goods_id}")
        return int(response.json()["num"]) if response.status_code == 200 else None

    def adjust(self, goods_id: str, **body: Any) -> httpx.Response:
        return self.stock.post(f"/stock/{goods_id}/adjustments", json=body)

    def history(self, goods_id: str, limit: int = 50) -> dict[str, Any]:
        return dict(self.stock.get(f"/stock/{goods_id}/history", params={"limit": limit}).json())

    def flows(self, flag: str) -> list[dict[str, Any]]:
        return list(self.stock.get(f"/stockFlow/{flag}").json())

    def gen_order(self, body: dict[str, Any], idempotency_key: str | None = None) -> httpx.Response:
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        return self.order.post("/genOrder", json=body, headers=headers)

    def order_row(self, order_id: str) -> dict[str, Any]:
        return dict(self.order.get(f"/orders/{order_id}").json())

    def cancel(self, order_id: str) -> httpx.Response:
        return self.order.post(f"/orders/{order_id}/cancel")

    def cancel_by_key(self, idempotency_key: str) -> httpx.Response:
        return self.order.post("/cancelOrder", headers={"Idempotency-Key": idempotency_key})

    def pay(self, order_id: str) -> httpx.Response:
        return self.order.post(f"/orders/{order_id}/pay")

    def close(self) -> None:
        self.order.close()
        self.stock.close()
