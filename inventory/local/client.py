"""A small HTTP client of both services, as any user of the stack would write one."""

from __future__ import annotations

from typing import Any

import httpx

from inventory.local.stack_state import StackState


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
