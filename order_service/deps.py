"""What the order service's handlers need, built once per app by create_app."""

from __future__ import annotations

from dataclasses import dataclass

import redis
from sqlalchemy import Engine

from order_service.cancellation import Cancellation
from order_service.flow import OrderFlow
from order_service.reservation_orders import ReservationOrders
from order_service.reservations import Reservations
from order_service.stock_client import StockClient
from order_service.store import OrderStore
from shared.config.settings import Settings
from shared.web.health import database_ok, redis_ok


@dataclass
class OrderDeps:
    settings: Settings
    engine: Engine
    redis: redis.Redis
    stock: StockClient
    store: OrderStore
    flow: OrderFlow
    cancellation: Cancellation
    reservations: Reservations
    reservation_orders: ReservationOrders

    def health(self) -> dict[str, bool]:
        return {
            "database": database_ok(self.engine, "order database"),
            "redis": redis_ok(self.redis),
            "stock_service": self.stock.healthy(),
        }

    def close(self) -> None:
        self.stock.close()
        self.redis.close()
        self.engine.dispose()
