"""create_app for the stock service."""

from __future__ import annotations

import logging

from flask import Flask, Response, jsonify
from prometheus_client.core import Metric

from shared.admin import admin_auth
from shared.api_app import make_api_app
from shared.db import DatabaseUnavailable, make_engine
from shared.http_errors import register_error_handlers
from shared.locks import LockError, LockLost, LockTimeout, make_lock_backend
from shared.logs import configure_logging
from shared.metrics import LOCK_LOSSES, gauge_family, install_metrics
from shared.redis_client import make_redis
from shared.request_id import install_request_ids
from shared.settings import Settings
from shared.startup import prepare_schema
from stock_service.api import stock_routes
from stock_service.deduction import RedisUnavailable, StockDeduction
from stock_service.deps import StockDeps
from stock_service.faults import NO_FAULTS, Faults
from stock_service.faults_api import fault_routes
from stock_service.schemas import input_models
from stock_service.store import StockStore

log = logging.getLogger("stock_service")


def create_app(settings: Settings | None = None) -> Flask:
    settings = settings or Settings.from_env()
    configure_logging(settings.log_level, settings.log_format)
    app = make_api_app(
        "stock_service",
        settings,
        "Stock service",
        "Deducts stock once per operation flag (PUT /reduceStock/{flag}) under a lock per goods "
        "id, and keeps the stock flow the order service confirms against. Errors are "
        '`{"error": ..., "field"?: ...}`; a dependency that is down is a 503 naming it.',
    )
    engine = make_engine(settings.stock_database_url)
    prepare_schema(engine, "stock", settings.migrate_on_start)
    redis_client = make_redis(settings.redis_url)
    locks = make_lock_backend(settings, engine, redis_client)
    faults = Faults(redis_client) if settings.fault_injection else NO_FAULTS
    store = StockStore(engine, fencing=settings.fencing, faults=faults)
    deduction = StockDeduction(
        store,
        redis_client,
        locks,
        settings.lock_scope,
        settings.lock_timeout,
        faults,
        batch_max=settings.deduct_batch_max,
        patience=settings.deduct_batch_patience,
    )
    app.extensions["stock"] = StockDeps(settings, engine, redis_client, locks, store, deduction)
    models = input_models(settings.max_lines, settings.max_quantity, settings.max_stock_level)
    admin = admin_auth(settings.admin_token)
    app.register_blueprint(stock_routes(models, admin))
    if not settings.admin_token:
        log.warning("ADMIN_TOKEN is not set: the admin routes (PUT /stock, PUT /faults) are off")
    if settings.fault_injection:
        log.warning("FAULT_INJECTION is on: PUT /faults/{point} can break this service")
        app.register_blueprint(fault_routes(models, admin))
    register_error_handlers(app)
    install_request_ids(app)
    install_metrics(app, "stock", lambda: stock_levels(store))
    register_dependency_errors(app)
    return app


def stock_levels(store: StockStore) -> list[Metric]:
    """Read at scrape time: the levels of the 500 goods ids written last (a bounded series)."""
    try:
        levels = store.recent_levels()
    except DatabaseUnavailable:
        return []  # the scrape still answers, without the levels
    return [gauge_family("stock_level", "Units in stock, by goods id", "goods_id", levels)]


def register_dependency_errors(app: Flask) -> None:
    """A dependency that is down or a lock not had: 503, a JSON error naming it, a log line."""

    def unavailable(message: str, dependency: str) -> tuple[Response, int]:
        log.warning("503: %s", message)
        return jsonify({"error": message, "dependency": dependency}), 503

    @app.errorhandler(LockTimeout)
    def _lock_timeout(exc: LockTimeout) -> tuple[Response, int]:
        return unavailable(f"lock wait timed out: {exc}", "lock")

    @app.errorhandler(LockLost)
    def _lock_lost(exc: LockLost) -> tuple[Response, int]:
        LOCK_LOSSES.inc()
        return unavailable(f"lock lost, nothing written: {exc}", "lock")

    @app.errorhandler(LockError)
    def _lock_error(exc: LockError) -> tuple[Response, int]:
        return unavailable(str(exc), exc.dependency)

    @app.errorhandler(RedisUnavailable)
    def _redis(exc: RedisUnavailable) -> tuple[Response, int]:
        return unavailable(f"redis unavailable: {exc}", "redis")

    @app.errorhandler(DatabaseUnavailable)
    def _db(exc: DatabaseUnavailable) -> tuple[Response, int]:
        return unavailable(f"{exc} unavailable", "database")
