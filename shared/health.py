"""Health checks of the dependencies both services share, each logging what is down."""

from __future__ import annotations

import logging

import redis
from sqlalchemy import Engine, text
from sqlalchemy.exc import SQLAlchemyError

log = logging.getLogger(__name__)


def database_ok(engine: Engine, name: str) -> bool:
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        return True
    except SQLAlchemyError:
        log.warning("health: %s unreachable", name)
        return False


def redis_ok(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:
        log.warning("health: redis unreachable")
        return False
