"""What a buyer does after placing an order, in the load test: cancel it at once (racing its
own genOrder, by the Idempotency-Key, since its id is not known yet), cancel it once placed,
pay its hold, pay it and cancel it at the same moment (the payment's release of the held units
races the cancel's return of them: they must stop being held once, which the check of held
units holds the run to), or leave the hold to expire. Every answer is counted by kind and
status."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import httpx


class AfterSale:
    def __init__(self, client: httpx.AsyncClient, order_url: str, timeout: float) -> None:
        self.client = client
        self.order_url = order_url
        self.timeout = timeout
        self.answers: Counter[str] = Counter()

    async def cancel_by_key(self, key: str) -> None:
        """Until the order exists under `key` (404 before), then cancel it: while its genOrder
        may still be deducting, so the cancel races the deduction."""
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            status = await self._post("/cancelOrder", {"Idempotency-Key": key})
            if status != 404:
                self.answers[f"cancel at once {status}"] += 1
                return
            await asyncio.sleep(0.005)
        self.answers["cancel at once: no order appeared"] += 1

    async def act(self, what: str, order_id: str) -> None:
        if what == "cancel":
            status = await self._post(f"/orders/{order_id}/cancel")
            self.answers[f"cancel {status}"] += 1
        elif what == "pay":
            status = await self._post(f"/orders/{order_id}/pay")
            self.answers[f"pay {status}"] += 1
        elif what == "pay-cancel":
            paid, cancelled = await asyncio.gather(
                self._post(f"/orders/{order_id}/pay"), self._post(f"/orders/{order_id}/cancel")
            )
            self.answers[f"pay {paid} with cancel {cancelled} at once"] += 1
        elif what == "expire":
            self.answers["hold left to expire"] += 1

    async def _post(self, path: str, headers: dict[str, str] | None = None) -> int:
        try:
            response = await self.client.post(self.order_url + path, headers=headers or {})
        except httpx.TransportError:
            return 0
        return response.status_code
