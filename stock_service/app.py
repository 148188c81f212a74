"""create_app for the stock service."""

from __future__ import annotations

import logging

from flask import Flask
from prometheus_client.core import Metric
from sqlalchemy import Engine

from coordination.locks import LockLost, make_lock_backend
from shared.config.settings import Settings
from shared.database.engines import DatabaseTimeouts, DatabaseUnavailable, make_engine
from shared.database.startup import prepare_schema
from shared.errors import DependencyUnavailable
from shared.faults import NO_FAULTS, Faults
from shared.logs import configure_logging
from shared.metrics import LOCK_LOSSES, gauge_family, install_metrics
from shared.redis_client import make_redis
from shared.web.admin_auth import admin_auth
from shared.web.api_app import make_api_app
from shared.web.http_errors import register_error_handlers
from shared.web.request_id import install_request_ids
from stock_service.api import (
    SERVICE_ROUTES,
    StockDeps,
    events_routes,
    fault_routes,
    input_models,
    ledger_routes,
    location_routes,
    service_guard,
    settle_routes,
    stock_routes,
    subscription_routes,
    transfer_routes,
)
from stock_service.deduction import LockPolicy, StockDeduction, gunicorn_threads, lock_wait_threads
from stock_service.ledger import Ledger
from stock_service.locations import LocationBook
from stock_service.storage import StockStore
from stock_service.webhooks import counts as webhook_counts

log = logging.getLogger("stock_service")


def create_app(settings: Settings | None = None) -> Flask:
    settings = settings or Settings.from_env(program="stock service")
    configure_logging(settings.log_level, settings.log_format)
    app = make_api_app(
        "stock_service",
        settings,
        "Stock service",
        "Deducts stock once per operation flag (PUT /reduceStock/{flag}) under a lock per goods "
        "id, and keeps the stock flow the order service confirms against. Errors are "
        '`{"error": ..., "field"?: ...}`; a dependency that is down is a 503 naming it.',
    )
    engine = make_engine(
        settings.stock_database_url, application="stock", timeouts=DatabaseTimeouts.of(settings)
    )
    prepare_schema(engine, "stock", settings.migrate_on_start)
    redis_client = make_redis(settings.redis_url)
    locks = make_lock_backend(settings, engine, redis_client)
    faults = Faults(redis_client) if settings.fault_injection else NO_FAULTS
    store = StockStore(engine)
    policy = LockPolicy(
        settings.lock_scope,
        settings.lock_timeout,
        settings.fencing,
        settings.deduct_batch_max,
        settings.deduct_batch_patience,
        settings.max_stock_level,
        queue_max=settings.lock_queue_max,
    )
    deduction = StockDeduction(
        store, redis_client, locks, policy, faults, events=settings.stock_events
    )
    # The threads one stalled lock's waiters may take: half gunicorn's (lock_queue.py); a lock
    # is stalled once waited for the patience, after which a batch treats it as held elsewhere.
    queues = deduction.runner.queues
    queues.thread_bound = lock_wait_threads(gunicorn_threads())
    queues.stalled_after = settings.deduct_batch_patience
    app.extensions["stock"] = StockDeps(
        settings,
        engine,
        redis_client,
        locks,
        store,
        deduction,
        Ledger(engine),
        LocationBook(engine),
    )
    models = input_models(settings.max_lines, settings.max_quantity, settings.max_stock_level)
    admin = admin_auth(settings.admin_token, "stock service")
    app.register_blueprint(stock_routes(models, admin))
    app.register_blueprint(settle_routes())
    app.register_blueprint(ledger_routes(admin, settings.max_stock_level))
    app.register_blueprint(events_routes())
    app.register_blueprint(location_routes(admin, settings.max_stock_level))
    app.register_blueprint(transfer_routes(admin, settings.max_stock_level))
    app.register_blueprint(subscription_routes(admin, settings.webhook_allow_private))
    if settings.stock_service_token:
        app.before_request(service_guard(settings.stock_service_token, SERVICE_ROUTES))
    if not settings.admin_token:
        log.warning("ADMIN_TOKEN is not set: the admin routes (PUT /stock, PUT /faults) are off")
    if settings.fault_injection:
        log.warning("FAULT_INJECTION is on: PUT /faults/{point} can break this service")
        app.register_blueprint(fault_routes(models, admin))
    register_error_handlers(app, count_lock_losses)
    install_request_ids(app)
    install_metrics(app, "stock", lambda: stock_levels(store) + webhook_waiting(engine))
    return app


def stock_levels(store: StockStore) -> list[Metric]:
    """Read at scrape time: the levels of the 500 goods ids written last (a bounded series)."""
    try:
        levels = store.recent_levels()
    except DatabaseUnavailable:
        return []  # the scrape still answers, without the levels
    return [gauge_family("stock_level", "Units in stock, by goods id", "goods_id", levels)]


def webhook_waiting(engine: Engine) -> list[Metric]:
    """Read at scrape time: the webhook deliveries pending and dead (dead letters) now."""
    try:
        found = webhook_counts(engine)
    except DatabaseUnavailable:
        return []
    return [
        gauge_family(
            "webhook_deliveries_waiting",
            "Webhook deliveries not delivered, by state (pending, dead: the dead letters)",
            "state",
            found,
        )
    ]


def count_lock_losses(exc: DependencyUnavailable) -> None:
    if isinstance(exc, LockLost):
        LOCK_LOSSES.inc()
