"""The load test's operator: `--restocks N` restocks while the buyers buy, each an
adjustment of reason `restock` through the admin route, adding `size` units to the run's goods
ids in turn, sent once a share of the orders is done (the i-th after i/(N+1) of them), so
stock comes back after refusals and the check's I1 (initial + adjusted - final = flows -
returns), I4 (a refusal before a restock is no lost sale) and I9 (a buyer told no is never sold
to when stock comes back) run across them. Not retried: a restock sent twice would count twice;
an answer that is not 201 is counted by its status and the check reads the ledger as it is."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable

import httpx


class Restocker:
    def __init__(
        self,
        client: httpx.AsyncClient,
        stock_url: str,
        admin: dict[str, str],
        goods_ids: list[str],
        prefix: str,
    ) -> None:
        self.client = client
        self.stock_url = stock_url
        self.admin = admin
        self.goods_ids = goods_ids
        self.prefix = prefix
        self.answers: Counter[str] = Counter()
        self.units = 0  # added by the restocks answered 201

    async def run(self, count: int, size: int, orders: int, done: Callable[[], int]) -> None:
        """`count` restocks of `size` units; `done()` says how many orders are finished."""
        for i in range(1, count + 1):
            while done() < orders * i // (count + 1):
                await asyncio.sleep(0.02)
            goods = self.goods_ids[(i - 1) % len(self.goods_ids)]
            body = {"delta": size, "reason": "restock", "reference": f"{self.prefix}restock-{i}"}
            try:
                response = await self.client.post(
                    f"{self.stock_url}/stock/{goods}/adjustments", json=body, headers=self.admin
                )
                status = response.status_code
            except httpx.TransportError:
                status = 0
            self.answers[f"restock {status}"] += 1
            if status == 201:
                self.units += size
