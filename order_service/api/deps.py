"""What the order service's handlers need, built once per app by create_app."""

from __future__ import annotations

from dataclasses import dataclass

import redis
from sqlalchemy import Engine

from order_service.placing import Cancellation, OrderFlow, StockClient
from order_service.reservations import ReservationOrders, Reservations
from order_service.storage.buyer_limits import BuyerRules
from order_service.storage.store import OrderStore
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
    buyer_rules: BuyerRules

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
