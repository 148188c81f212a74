"""What the order service's handlers need, built once per app by create_app."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import redis
from sqlalchemy import Engine, text

from order_service.flow import OrderFlow
from order_service.stock_client import StockClient
from order_service.store import OrderStore
from shared.settings import Settings

log = logging.getLogger(__name__)


@dataclass
class OrderDeps:
    settings: Settings
    engine: Engine
    redis: redis.Redis
    stock: StockClient
    store: OrderStore
    flow: OrderFlow

    def health(self) -> dict[str, bool]:
        checks = {"database": False, "redis": False, "stock_service": self.stock.healthy()}
        try:
            with self.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
            checks["database"] = True
        except Exception:
            log.warning("health: order database unreachable")
        try:
            checks["redis"] = bool(self.redis.ping())
        except redis.RedisError:
            log.warning("health: redis unreachable")
        return checks

    def close(self) -> None:
        self.stock.close()
        self.redis.close()
        self.engine.dispose()
