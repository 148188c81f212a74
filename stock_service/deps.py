"""What the stock service's handlers need, built once per app by create_app."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import redis
from sqlalchemy import Engine, text

from shared.locks import LockBackend
from shared.settings import Settings
from stock_service.deduction import StockDeduction
from stock_service.store import StockStore

log = logging.getLogger(__name__)


@dataclass
class StockDeps:
    settings: Settings
    engine: Engine
    redis: redis.Redis
    locks: LockBackend
    store: StockStore
    deduction: StockDeduction

    def health(self) -> dict[str, bool]:
        checks = {"database": False, "redis": False, "lock": self.locks.healthy()}
        try:
            with self.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
            checks["database"] = True
        except Exception:
            log.warning("health: stock database unreachable")
        try:
            checks["redis"] = bool(self.redis.ping())
        except redis.RedisError:
            log.warning("health: redis unreachable")
        return checks

    def close(self) -> None:
        self.locks.close()
        self.redis.close()
        self.engine.dispose()
