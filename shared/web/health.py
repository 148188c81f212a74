"""Health checks of the dependencies both services share, each logging what is down."""

from __future__ import annotations

import logging
from collections.abc import Callable

import redis
from apiflask import APIBlueprint
from flask import Response, jsonify
from sqlalchemy import Engine, text
from sqlalchemy.exc import SQLAlchemyError

from shared.web.api_app import answers
from shared.web.schemas import Health

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


def add_health_route(bp: APIBlueprint, checks: Callable[[], dict[str, bool]], what: str) -> None:
    """GET /healthz on `bp`: 200 when every check passes, else 503, with the checks."""

    @bp.get("/healthz")
    @bp.doc(
        summary=f"Health: {what}",
        responses=answers({200: (Health, "All dependencies up"), 503: (Health, "One is down")}),
    )
    def healthz() -> tuple[Response, int]:
        results = checks()
        ok = all(results.values())
        return jsonify(
            {"status": "ok" if ok else "degraded", "checks": results}
        ), 200 if ok else 503
