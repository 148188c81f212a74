"""What the stock service's handlers need, built once per app by create_app."""

from __future__ import annotations

from dataclasses import dataclass

import redis
from sqlalchemy import Engine

from coordination.locks import LockBackend
from shared.config.settings import Settings
from shared.web.health import database_ok, redis_ok
from stock_service.deduction import StockDeduction
from stock_service.ledger import Ledger
from stock_service.locations import LocationBook
from stock_service.storage import StockStore


@dataclass
class StockDeps:
    settings: Settings
    engine: Engine
    redis: redis.Redis
    locks: LockBackend
    store: StockStore
    deduction: StockDeduction
    ledger: Ledger
    locations: LocationBook

    def health(self) -> dict[str, bool]:
        return {
            "database": database_ok(self.engine, "stock database"),
            "redis": redis_ok(self.redis),
            "lock": self.locks.healthy(),
        }

    def close(self) -> None:
        self.locks.close()
        self.redis.close()
        self.engine.dispose()
