"""The stock service's edge as the stateful test (tests/integration/test_stock_stateful.py) and
its regression tests drive it: one method per route that moves stock, each answering its
status and body, over the Flask test client of an app on a real database, ZooKeeper and Redis.
A deduction writes its operation flag to Redis first, as the order service does."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import redis as redis_lib
from flask.testing import FlaskClient

import stock_service
from shared.config.settings import Settings
from tests.conftest import ADMIN


@dataclass(frozen=True)
class Answered:
    status: int
    body: Any

    def __str__(self) -> str:
        return f"{self.status} {self.body}"


class StockEdge:
    def __init__(self, client: FlaskClient, flags: redis_lib.Redis) -> None:
        self.client = client
        self.flags = flags

    def _call(self, method: str, path: str, body: Any = None, admin: bool = False) -> Answered:
        response = self.client.open(
            path, method=method, json=body, headers=ADMIN if admin else None
        )
        return Answered(response.status_code, response.get_json(silent=True))

    def make_location(self, location: str, priority: int, active: bool) -> Answered:
        body = {"priority": priority, "active": active}
        return self._call("PUT", f"/locations/{location}", body, admin=True)

    def locations(self) -> Answered:
        return self._call("GET", "/locations")

    def seed(self, goods_id: str, num: int) -> Answered:
        return self._call("PUT", f"/stock/{goods_id}", {"num": num}, admin=True)

    def set_at(self, goods_id: str, location: str, num: int) -> Answered:
        path = f"/stock/{goods_id}/locations/{location}"
        return self._call("PUT", path, {"num": num}, admin=True)

    def adjust(self, goods_id: str, body: dict[str, Any]) -> Answered:
        return self._call("POST", f"/stock/{goods_id}/adjustments", body, admin=True)

    def policy(
        self, goods_id: str, limit: int, locations: dict[str, int] | None = None
    ) -> Answered:
        body: dict[str, Any] = {"backorderLimit": limit}
        if locations is not None:
            body["locations"] = locations
        return self._call("PUT", f"/stock/{goods_id}/policy", body, admin=True)

    def deduct(self, flag: str, lines: list[dict[str, Any]], fill: str, hold: bool) -> Answered:
        self.flags.set(flag, "1")  # the order service's operation flag, live until decided
        query = f"?fill={fill}" + ("&hold=true" if hold else "")
        return self._call("PUT", f"/reduceStock/{flag}{query}", lines)

    def pay(self, flag: str) -> Answered:
        return self._call("PUT", f"/holds/{flag}/release")

    def cancel(self, flag: str) -> Answered:
        return self._call("PUT", f"/returnStock/{flag}")

    def flag_state(self, flag: str) -> Answered:
        return self._call("GET", f"/flags/{flag}")

    def send(self, goods_id: str, source: str, target: str, units: int, reference: str) -> Answered:
        body = {"goodsId": goods_id, "from": source, "to": target, "units": units}
        return self._call("POST", "/transfers", {**body, "reference": reference}, admin=True)

    def transfer_step(self, transfer_id: str, step: str) -> Answered:
        return self._call("POST", f"/transfers/{transfer_id}/{step}", admin=True)

    def stock(self, goods_id: str) -> Answered:
        return self._call("GET", f"/stock/{goods_id}")


@contextmanager
def stock_app(settings: Settings) -> Iterator[tuple[Any, StockEdge]]:
    """The stock service's app in this process, and its edge; closed when the block ends."""
    app = stock_service.create_app(settings)
    flags = redis_lib.Redis.from_url(settings.redis_url)
    try:
        yield app, StockEdge(app.test_client(), flags)
    finally:
        flags.close()
        app.extensions["stock"].close()
