"""Which settings each program reads: the order service, the stock service, the elected
reconciler, the relay of stock events and the webhook deliverer. Each program starts from its
own (the variables of the others are not even read from its environment) and refuses only its
own bad values (shared/config/settings_checks.py): a RECONCILE_OLDER_THAN below the budget stops
the reconcilers, not the services; a LOCK_BACKEND=redlock with two REDLOCK_URLS stops the stock
service, not the relay. The parts are composed, each the settings of one thing a program does.
tests/unit/test_program_settings.py holds each list against the settings its program's code reads,
and docs/configuration.md against the lists."""

from __future__ import annotations

LOGS = ("log_level", "log_format")
SCHEMA = ("migrate_on_start",)
# Every program's connections: their statement and lock timeouts (shared/database/engines.py).
DATABASE = ("db_statement_timeout_ms", "db_lock_timeout_ms")
FAULTS = ("fault_injection",)
LIMITS = ("max_body_bytes", "max_lines", "max_quantity")
# The order service's holds and the flash-sale rules per buyer (docs/buyer-limits.md).
BUYERS = ("reservation_ttl_max_seconds", "pay_within_max_seconds", "buyer_max_held_default")
# Where the singletons (the reconcilers, the relays) elect their leader, and how they reach it.
ELECTION = (
    "election_backend",
    "lock_backend",  # the election's default: etcd with LOCK_BACKEND=etcd
    "zk_hosts",
    "zk_auth",
    "zk_ca_file",
    "zk_cert_file",
    "zk_key_file",
    "zk_session_timeout",
    "etcd_endpoints",
    "etcd_lease_ttl",
)
# The stock service's lock and combining under it.
LOCK = (
    *ELECTION,
    "lock_scope",
    "lock_timeout",
    "lock_root",
    "redis_lock_ttl",
    "redis_lock_min_replicas",
    "unique_key_lock_ttl",
    "redlock_urls",
    "redlock_ttl",
    "fencing",
    "deduct_batch_max",
    "deduct_batch_patience",
    "deduct_batch_budget",
    "lock_queue_max",
)
# An order's flag in Redis, and its calls of the stock service: one request's budget.
FLAGS = ("redis_url", "flag_ttl", "flag_write_seconds")
STOCK_CALLS = (
    "stock_service_url",
    "stock_service_token",
    "stock_call_timeout",
    "stock_call_retries",
    "stock_call_budget",
    "retry_backoff",
    "confirm_backoff",
)
RECONCILE = (
    "reconcile_interval",
    "reconcile_older_than",
    "reconcile_age_unchecked_for_tests",
    "reconcile_void_after",
    "reconciler_epoch",
)
EVENTS = (
    "stock_events_stream",
    "stock_events_maxlen",
    "stock_events_min_replicas",
    "stock_events_poll",
)
WEBHOOKS = (
    "webhook_allow_private",
    "webhook_max_attempts",
    "webhook_max_age_seconds",
    "webhook_timeout_seconds",
    "webhook_backoff_seconds",
    "webhook_max_backoff_seconds",
    "webhook_poll_seconds",
    "webhook_workers",
    "webhook_metrics_port",
)

PROGRAMS: dict[str, frozenset[str]] = {
    "order service": frozenset(
        (
            "order_database_url",
            *DATABASE,
            *FLAGS,
            *STOCK_CALLS,
            "order_batch_max",
            "order_batch_bytes",
            "order_batch_wait_ms",
            "idempotency_wait",
            *LIMITS,
            *BUYERS,
            "admin_token",
            *SCHEMA,
            *FAULTS,
            *LOGS,
        )
    ),
    "stock service": frozenset(
        (
            "stock_database_url",
            *DATABASE,
            "redis_url",
            *LOCK,
            "stock_events",
            "stock_service_token",
            "admin_token",
            "webhook_allow_private",  # POST /subscriptions refuses private addresses
            *LIMITS,
            "max_stock_level",
            *SCHEMA,
            *FAULTS,
            *LOGS,
        )
    ),
    "reconciler": frozenset(
        (
            "order_database_url",
            *DATABASE,
            *FLAGS,
            *STOCK_CALLS,
            *RECONCILE,
            *ELECTION,
            *FAULTS,
            *LOGS,
        )
    ),
    "relay": frozenset(("stock_database_url", *DATABASE, "redis_url", *EVENTS, *ELECTION, *LOGS)),
    "webhook deliverer": frozenset(("stock_database_url", *DATABASE, *WEBHOOKS, *ELECTION, *LOGS)),
}
