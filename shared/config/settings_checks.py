"""What makes a setting's value bad, one check per subject: each names the settings it is about,
so that a program checks only the values it reads (shared/config/program_settings.py) and a bad
value of another program's setting never stops it. With no program named, every check runs (the
tooling, the tests)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from shared.contract import MAX_BATCH_FLAGS

# A companion wait longer than a few milliseconds would cost every queued order more than the
# batch it fills saves.
MAX_BATCH_WAIT_MS = 20.0

# A shared.config.settings.Settings: named loosely, as that module imports this one (no circle).
Settings = Any

# The hard maxima of a reservation's ttlSeconds and a hold's payWithinSeconds: their settings
# (RESERVATION_TTL_MAX_SECONDS, PAY_WITHIN_MAX_SECONDS) lower them, never raise them.
TTL_CEILING = 3600  # a cart's hold of at most an hour
PAY_WITHIN_CEILING = 7 * 24 * 3600  # a hold of at most a week
# A buyer limit's largest value (order_service/core/buyer_limits.py: BUYER_LIMIT_MAX).
BUYER_LIMIT_CEILING = 1_000_000_000

LOCK_BACKENDS = ("zookeeper", "redis", "etcd", "database", "unique-key", "redlock", "none")
LOCK_SCOPES = ("sku", "global")


@dataclass(frozen=True)
class Check:
    about: frozenset[str]  # the settings whose value it judges
    problem: Callable[[Settings], str | None]  # None: fine


def _positive(name: str, at_least: float = 0.0) -> Check:
    def problem(s: Settings) -> str | None:
        value = getattr(s, name)
        bad = value < at_least if at_least else value <= 0
        return (
            f"{name.upper()} must be {f'{at_least:g} or more' if at_least else 'positive'}"
            if bad
            else None
        )

    return Check(frozenset({name}), problem)


def _not_negative(name: str) -> Check:
    return Check(
        frozenset({name}),
        lambda s: f"{name.upper()} must be 0 or more" if getattr(s, name) < 0 else None,
    )


def _age_problem(s: Settings) -> str | None:
    if s.reconcile_age() < 0:
        return "RECONCILE_OLDER_THAN must be 0 or more"
    if s.reconcile_age() < s.request_budget() and not s.reconcile_age_unchecked_for_tests:
        return (
            f"RECONCILE_OLDER_THAN={s.reconcile_age():g} is below one request's budget "
            f"({s.request_budget():g} s from FLAG_WRITE_SECONDS, STOCK_CALL_BUDGET, "
            "STOCK_CALL_TIMEOUT and CONFIRM_BACKOFF): the reconciler would void orders "
            "whose request is still at work; leave it unset, or raise it"
        )
    return None


def _void_problem(s: Settings) -> str | None:
    if s.reconcile_void_after < s.reconcile_age() and not s.reconcile_age_unchecked_for_tests:
        return (
            f"RECONCILE_VOID_AFTER={s.reconcile_void_after:g} is below the age the "
            f"reconciler takes orders at ({s.reconcile_age():g} s): an order it could "
            "deduct again would be voided at its first look"
        )
    return None


def _one_of(name: str, allowed: Iterable[str]) -> Check:
    allowed = tuple(allowed)
    return Check(
        frozenset({name}),
        lambda s: (
            None
            if getattr(s, name) in allowed
            else f"{name.upper()} must be one of {', '.join(a or '(empty)' for a in allowed)}"
        ),
    )


def _within(name: str, ceiling: int) -> Check:
    return Check(
        frozenset({name}),
        lambda s: (
            None
            if 1 <= getattr(s, name) <= ceiling
            else f"{name.upper()} must be 1 to {ceiling} (it lowers the maximum, never raises it)"
        ),
    )


CHECKS = (
    _within("reservation_ttl_max_seconds", TTL_CEILING),
    _within("pay_within_max_seconds", PAY_WITHIN_CEILING),
    Check(
        frozenset({"buyer_max_held_default"}),
        lambda s: (
            None
            if s.buyer_max_held_default is None
            or 0 <= s.buyer_max_held_default <= BUYER_LIMIT_CEILING
            else f"BUYER_MAX_HELD_DEFAULT must be 0 to {BUYER_LIMIT_CEILING}, or unset (no cap)"
        ),
    ),
    _one_of("lock_backend", LOCK_BACKENDS),
    _one_of("election_backend", ("", "zookeeper", "etcd")),
    _one_of("log_format", ("text", "json")),
    _one_of("lock_scope", LOCK_SCOPES),
    _positive("deduct_batch_patience"),
    _positive("stock_events_poll"),
    _positive("etcd_lease_ttl", at_least=1),
    _positive("redis_lock_ttl"),
    _positive("zk_session_timeout"),
    _positive("unique_key_lock_ttl"),
    _positive("redlock_ttl"),
    _positive("reconcile_interval"),
    _positive("db_statement_timeout_ms"),
    _positive("db_lock_timeout_ms"),
    Check(frozenset({"reconcile_older_than"}), _age_problem),
    Check(frozenset({"reconcile_void_after"}), _void_problem),
    _positive("flag_write_seconds"),
    _positive("stock_call_budget"),
    _positive("lock_timeout"),
    _positive("stock_call_timeout"),
    Check(
        frozenset({"order_batch_max"}),
        lambda s: (
            None
            if 1 <= s.order_batch_max <= MAX_BATCH_FLAGS
            else f"ORDER_BATCH_MAX must be 1 to {MAX_BATCH_FLAGS} (1: one at a time)"
        ),
    ),
    Check(
        frozenset({"order_batch_wait_ms"}),
        lambda s: (
            None
            if 0 <= s.order_batch_wait_ms <= MAX_BATCH_WAIT_MS
            else f"ORDER_BATCH_WAIT_MS must be 0 to {MAX_BATCH_WAIT_MS:g} (0: no wait)"
        ),
    ),
    _positive("deduct_batch_max", at_least=1),
    _positive("lock_queue_max", at_least=1),
    # About the budget alone: checked by whatever reads it (the stock service against the
    # default call timeout; the tooling, the stack and the cluster against the order
    # service's own). At run time a caller's X-Caller-Timeout-Ms caps it at half of that too.
    Check(
        frozenset({"deduct_batch_budget"}),
        lambda s: (
            None
            if s.deduct_batch_budget is None
            or 0 < s.deduct_batch_budget <= s.stock_call_timeout / 2
            else f"DEDUCT_BATCH_BUDGET must be positive and at most half of STOCK_CALL_TIMEOUT "
            f"({s.stock_call_timeout / 2:g} s): a batched call answers well before its caller "
            "gives up on it"
        ),
    ),
    _positive("webhook_max_attempts", at_least=1),
    _positive("webhook_max_age_seconds"),
    _positive("webhook_timeout_seconds"),
    _positive("webhook_backoff_seconds"),
    _positive("webhook_poll_seconds"),
    _positive("webhook_workers", at_least=1),
    _not_negative("webhook_metrics_port"),
    Check(
        frozenset({"webhook_max_backoff_seconds"}),
        lambda s: (
            None
            if s.webhook_max_backoff_seconds >= s.webhook_backoff_seconds
            else "WEBHOOK_MAX_BACKOFF_SECONDS must be at least WEBHOOK_BACKOFF_SECONDS"
        ),
    ),
    _not_negative("stock_call_retries"),
    _not_negative("stock_events_min_replicas"),
    Check(
        frozenset({"zk_auth"}),
        lambda s: "ZK_AUTH must be user:password" if s.zk_auth and ":" not in s.zk_auth else None,
    ),
    # The stock service's lock alone: another program that reads LOCK_BACKEND (for the
    # election's default) is not stopped by what the lock itself needs.
    Check(
        frozenset({"redlock_urls"}),
        lambda s: (
            "LOCK_BACKEND=redlock needs 3 or more REDLOCK_URLS (a majority of N)"
            if s.lock_backend == "redlock" and len(s.redlock_url_list()) < 3
            else None
        ),
    ),
    Check(
        frozenset({"lock_timeout"}),
        # LOCK_BACKEND=database waits for its lock row in one statement, under its own lock
        # timeout (LOCK_TIMEOUT) but the connection's statement timeout: the wait must end as
        # a lock timeout (a 503 that says so), never be cut short by the statement timeout.
        lambda s: (
            f"LOCK_BACKEND=database needs DB_STATEMENT_TIMEOUT_MS above LOCK_TIMEOUT "
            f"({s.lock_timeout * 1000:g} ms): the lock's wait is one statement"
            if s.lock_backend == "database" and s.db_statement_timeout_ms <= s.lock_timeout * 1000
            else None
        ),
    ),
    Check(
        frozenset({"lock_timeout"}),
        # coordination/locks/database.py says why: SQLite has no row locks to wait on.
        lambda s: (
            "LOCK_BACKEND=database needs a PostgreSQL or MySQL STOCK_DATABASE_URL, not SQLite"
            if s.lock_backend == "database" and s.stock_database_url.startswith("sqlite")
            else None
        ),
    ),
)


def problems(settings: Settings, read: frozenset[str] | None = None) -> list[str]:
    """What is wrong with these settings, of the checks about what `read` names (None: all)."""
    found = []
    for check in CHECKS:
        if read is not None and not check.about & read:
            continue
        problem = check.problem(settings)
        if problem:
            found.append(problem)
    return found
