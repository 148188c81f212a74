"""create_app for the order service."""

from __future__ import annotations

import logging

import httpx
from flask import Flask

from order_service.api import (
    OrderDeps,
    buyer_limit_routes,
    dashboard_bp,
    order_routes,
    reservation_routes,
)
from order_service.placing import (
    CallPolicy,
    Cancellation,
    FlagWriter,
    OrderBatches,
    OrderFlow,
    StockClient,
)
from order_service.reservations import ReservationOrders, Reservations, ReservationStore
from order_service.storage.buyer_limits import BuyerRules
from order_service.storage.store import OrderStore
from shared.config.settings import Settings
from shared.database.engines import DatabaseTimeouts, make_engine
from shared.database.startup import prepare_schema
from shared.logs import configure_logging
from shared.metrics import install_metrics
from shared.redis_client import make_redis
from shared.web.api_app import make_api_app
from shared.web.http_errors import register_error_handlers
from shared.web.json_only import install_bodyless_post_rule
from shared.web.request_id import install_request_ids

log = logging.getLogger("order_service")


def create_app(
    settings: Settings | None = None, stock_transport: httpx.BaseTransport | None = None
) -> Flask:
    """`stock_transport` lets tests run the stock service in-process (httpx.WSGITransport)."""
    settings = settings or Settings.from_env(program="order service")
    if not 0 < settings.order_batch_bytes <= settings.max_body_bytes:
        # The stock service refuses a body over its MAX_BODY_BYTES (413): batches of big
        # orders would be refused whole, and each member sent again alone.
        raise ValueError("ORDER_BATCH_BYTES must be positive and at most MAX_BODY_BYTES")
    configure_logging(settings.log_level, settings.log_format)
    app = make_api_app(
        "order_service",
        settings,
        "Order service",
        "Places orders (POST /genOrder) and confirms each against the stock service's flow. "
        'Errors are `{"error": ..., "field"?: ...}`; a dependency that is down is a 503 '
        "naming it.",
    )
    engine = make_engine(
        settings.order_database_url, application="order", timeouts=DatabaseTimeouts.of(settings)
    )
    prepare_schema(engine, "order", settings.migrate_on_start)
    redis_client = make_redis(settings.redis_url)
    stock = StockClient(
        settings.stock_service_url,
        CallPolicy.from_settings(settings),
        transport=stock_transport,
        token=settings.stock_service_token,
        batch_bytes=settings.order_batch_bytes,
    )
    store = OrderStore(engine)
    flags = FlagWriter(redis_client, settings.flag_ttl, settings.flag_write_seconds)
    rules = BuyerRules(settings.buyer_max_held_default)  # the flash-sale rules per buyer
    batches = OrderBatches(
        store,
        flags,
        stock,
        settings.order_batch_max,
        settings.order_batch_wait_ms / 1000,
        rules,
    )
    flow = OrderFlow(
        store,
        redis_client,
        stock,
        batches,
        settings.confirm_backoff,
        settings.idempotency_wait,
        queue_patience=settings.stock_call_budget,
    )
    cancellation = Cancellation(store, stock)
    reservation_store = ReservationStore(store, rules)
    app.extensions["orders"] = OrderDeps(
        settings,
        engine,
        redis_client,
        stock,
        store,
        flow,
        cancellation,
        Reservations(reservation_store, stock, batches, redis_client, settings.idempotency_wait),
        ReservationOrders(store, reservation_store, flow, cancellation),
        rules,
    )
    app.register_blueprint(order_routes(settings))
    app.register_blueprint(reservation_routes(settings))
    app.register_blueprint(buyer_limit_routes(settings))
    app.register_blueprint(dashboard_bp)
    register_error_handlers(app)
    install_request_ids(app)
    install_metrics(app, "order")
    install_bodyless_post_rule(app)
    return app
