"""Settings read once from the environment (12-factor), with local defaults.

Every service receives a `Settings` in `create_app(settings)`; nothing reads the environment
later, so tests pass their own values and never patch `os.environ`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from shared.config.program_settings import PROGRAMS
from shared.config.settings_checks import LOCK_BACKENDS, LOCK_SCOPES, problems
from shared.redis_client import TIMEOUTS as REDIS_TIMEOUTS

__all__ = ["LOCK_BACKENDS", "LOCK_SCOPES", "PROGRAMS", "Settings"]

# One genOrder writes its flag at most this many times (the first, and once again after the
# stock service said it does not know the flag: Redis lost it), and calls reduceStock as often.
FLAG_WRITES = 2
# A batched reduceStock's budget when DEDUCT_BATCH_BUDGET is unset: some 20 to 100 times a
# healthy hold of a batch (10-50 ms), a fifth of the default STOCK_CALL_TIMEOUT.
DEDUCT_BATCH_BUDGET_DEFAULT = 1.0
# What one request may spend on its database steps besides its calls (the order row, the
# outcome): a margin, not a measured bound; PostgreSQL and MySQL connect within 5 s.
DATABASE_MARGIN_SECONDS = 5.0
# Optional whole numbers: unset or empty is None (no cap).
OPTIONAL_INTS = frozenset({"buyer_max_held_default"})


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"not a boolean: {text!r}")


def _floats(text: str) -> tuple[float, ...]:
    return tuple(float(part) for part in text.split(",") if part.strip())


@dataclass(frozen=True)
class Settings:
    """One field per environment variable: the variable is the field name in upper case."""

    order_database_url: str = "sqlite:///order.db"
    stock_database_url: str = "sqlite:///stock.db"
    redis_url: str = "redis://127.0.0.1:6379/0"
    zk_hosts: str = "127.0.0.1:2181"
    # This process's ZooKeeper identity, `user:password` (digest): the nodes it creates are
    # its own (and readable by everyone); empty, the open ACL of a single machine.
    zk_auth: str = ""
    # TLS to ZooKeeper's secure client port: the CA file that signed the ensemble's
    # certificates (empty: plain text), and this process's certificate and key when the
    # ensemble asks clients for one.
    zk_ca_file: str = ""
    zk_cert_file: str = ""
    zk_key_file: str = ""
    etcd_endpoints: str = "http://127.0.0.1:2379"  # comma-separated, tried in order
    # LOCK_BACKEND=redlock: independent Redis servers (comma-separated; 3 or 5), none of them
    # the flag Redis. `inventory up` starts three of its own when this is not set.
    redlock_urls: str = "redis://127.0.0.1:6380/0,redis://127.0.0.1:6381/0,redis://127.0.0.1:6382/0"
    stock_service_url: str = "http://127.0.0.1:8082"
    # Every connection's statement and lock timeouts on PostgreSQL and MariaDB, in ms
    # (shared/database/engines.py, DatabaseTimeouts): a statement waiting for a row lock past the
    # lock timeout, or running past the statement timeout, is cancelled and its transaction rolled
    # back (a 503, or the item skipped in a reconciler's pass), instead of waiting for as long as a
    # paused holder of the row stays paused. Far above any normal wait.
    db_statement_timeout_ms: int = 30_000
    db_lock_timeout_ms: int = 5_000

    # Lock strategy of the stock service.
    lock_backend: str = "zookeeper"
    # Where the singleton jobs (the reconciler, the relay of stock events) elect their leader:
    # zookeeper or etcd; empty: etcd with LOCK_BACKEND=etcd, else zookeeper.
    election_backend: str = ""
    lock_scope: str = "sku"
    lock_timeout: float = 10.0  # seconds a deduction waits for its lock before a 503
    lock_root: str = "/inventory/locks"
    zk_session_timeout: float = 10.0
    redis_lock_ttl: float = 10.0  # lease of a Redis lock; the watchdog renews it while held
    # A Redis lock is granted only once this many replicas have it (WAIT); 0: do not wait.
    redis_lock_min_replicas: int = 0
    etcd_lease_ttl: float = 10.0  # lease of an etcd lock holder, kept alive every third of it
    # How long a unique-key lock row lives before a waiter may delete it (never renewed).
    unique_key_lock_ttl: float = 10.0
    redlock_ttl: float = (
        10.0  # a RedLock grant's life; never renewed (coordination/locks/redlock.py)
    )
    # Combining: the deductions of one process waiting for the same lock are served in one lock
    # hold and one transaction, at most this many at a time; 1 serves them one hold each.
    deduct_batch_max: int = 32
    # How long a batch waits for all its locks before it serves the requests whose locks it
    # holds and lets the rest wait on their own (a lock stuck elsewhere never stalls others).
    deduct_batch_patience: float = 0.1
    # A batched reduceStock answers every flag within this many seconds, and always within half
    # its caller's timeout (X-Caller-Timeout-Ms): a flag whose lock is not had by then is
    # answered not_attempted (nothing written, retryable), never holding the flags served.
    # Unset: DEDUCT_BATCH_BUDGET_DEFAULT (1 s); a value set is at most half STOCK_CALL_TIMEOUT.
    deduct_batch_budget: float | None = None
    # Requests of one process waiting for one goods id's lock, at most: a newcomer past it is
    # answered 503 at once (Retry-After), instead of joining a queue it cannot get through.
    lock_queue_max: int = 256
    # Stock events: every ledger line (and threshold crossing) written to the outbox in its own
    # commit, and published by the elected relay to this Redis Stream, capped near MAXLEN
    # entries (XADD MAXLEN ~). STOCK_EVENTS=false writes none (to measure what they cost).
    stock_events: bool = True
    stock_events_stream: str = "inventory:stock-events"
    stock_events_maxlen: int = 100_000
    # The relay marks events sent only once this many Redis replicas have them (WAIT), lest a
    # Sentinel failover lose them (replication is asynchronous); 0 does not wait.
    stock_events_min_replicas: int = 0
    stock_events_poll: float = 0.05  # seconds between the relay's looks at an empty outbox
    # Webhooks (docs/webhooks.md): the stock events POSTed, signed, to the subscriptions' URLs by
    # the elected deliverer. A URL whose host resolves to a loopback, private, link-local,
    # multicast, unspecified or reserved address is refused (at POST /subscriptions, and again
    # before each delivery) unless WEBHOOK_ALLOW_PRIVATE: a subscription must not make the
    # service a way into the network it sits in.
    webhook_allow_private: bool = False
    # A failing delivery is tried again after a jittered, doubling wait (BACKOFF_SECONDS at
    # first, at most MAX_BACKOFF_SECONDS), and given up (dead, listed for a replay) after
    # MAX_ATTEMPTS tries or once its first try is MAX_AGE_SECONDS old, whichever comes first.
    webhook_max_attempts: int = 8
    webhook_max_age_seconds: float = 86_400.0
    webhook_timeout_seconds: float = 5.0  # a POST's connect, its send, and each wait to read
    webhook_backoff_seconds: float = 1.0
    webhook_max_backoff_seconds: float = 300.0
    webhook_poll_seconds: float = 0.2  # between the deliverer's looks when nothing is due
    webhook_workers: int = 8  # POSTs in flight at once; one subscription takes half at most
    webhook_metrics_port: int = 0  # the deliverer's /metrics (prometheus_client); 0: none
    # Protection against a stale lock holder: the fencing token on each stock row, and the
    # check of the lock's connection state before commit. Off only to show what it prevents.
    fencing: bool = True

    # The order service's side of the flow.
    flag_ttl: int = 1800  # seconds the operation flag lives in Redis (the article's 30 minutes)
    # Combining on the order side: the orders of one process that arrive while a batch is in
    # flight are placed together (one transaction, one pipeline, one stock call), at most this
    # many; 1 places them one at a time, as the article does.
    order_batch_max: int = 32
    order_batch_bytes: int = 48 * 1024  # its batched reduceStock body's most (order_service/app.py)
    # Milliseconds the leader of the order service's next batch may wait for companions under
    # a steady load (coordination/combining.py); a lone order never waits. 0: no wait.
    order_batch_wait_ms: float = 2.0
    # How long a flag's write is tried while Redis is down: a restart or a Sentinel failover
    # (3.4 s measured in the chaos run, where a 3 s budget lost 13 orders to redis_unavailable).
    flag_write_seconds: float = 6.0
    stock_call_timeout: float = 5.0
    stock_call_retries: int = 2  # retries after the first attempt, with the same flag
    stock_call_budget: float = 20.0  # total seconds all attempts may take
    retry_backoff: float = 0.2  # base of the jittered exponential backoff between attempts
    confirm_backoff: tuple[float, ...] = field(default=(3.0, 5.0, 10.0))  # the article's polls
    # The elected reconciler (`inventory reconciler`): a pass every this many seconds, over the
    # PENDING and CANCELLING orders older than RECONCILE_OLDER_THAN seconds. Unset: one
    # request's whole budget (request_budget(), from the settings above); a value below it is
    # refused: a reconciler would void orders whose request is still at work, and lose their
    # sales. RECONCILE_AGE_UNCHECKED_FOR_TESTS lets tests and demos take younger orders.
    reconcile_interval: float = 30.0
    reconcile_older_than: float | None = None
    reconcile_age_unchecked_for_tests: bool = False
    # A PENDING order whose flag the stock database has not decided (its deduction could not
    # run: no lock quorum, the stock service unreachable) is deducted again by the reconciler,
    # under the same flag, until it is this old; then its flag is voided and it FAILs. A fault
    # healed within it loses no sale; the buyer, told 503 PENDING, sees the order CONFIRMED
    # (GET /orders/{id}) at the first pass after the heal.
    reconcile_void_after: float = 300.0
    # The reconciler fence's epoch: raise it (on every reconciler) after the lock service was
    # rebuilt with the order database kept, as its new leaders' tokens start again from small
    # numbers and the fence holds the old ones (order_service/storage/transitions.py).
    reconciler_epoch: int = 0
    idempotency_wait: float = 30.0  # how long a repeat waits for the first request to finish

    # Input limits: anything larger is refused with a 4xx before anything is written.
    max_body_bytes: int = 64 * 1024
    max_lines: int = 100
    max_quantity: int = 10_000
    max_stock_level: int = 1_000_000_000
    # The most a reservation's ttlSeconds and a hold's payWithinSeconds may ask (above: 422);
    # each lowers its ceiling (an hour; a week), never raises it.
    reservation_ttl_max_seconds: int = 3600
    pay_within_max_seconds: int = 7 * 24 * 3600
    # The flash-sale rules per buyer (docs/buyer-limits.md): the units of a goods id one userId
    # may hold at once in reservations and unpaid holds, for a goods id whose own maxHeld is
    # not set (PUT /buyer-limits/{goodsId}); unset or empty: no cap.
    buyer_max_held_default: int | None = None

    # Schema: migrate at start-up, or refuse to start on an old schema (the default).
    migrate_on_start: bool = False

    # Fault injection for demos and tests. Off unless explicitly enabled.
    fault_injection: bool = False
    # The admin routes (PUT /stock, PUT /faults) need `Authorization: Bearer <this>`; empty:
    # they are off. `inventory up` generates one and its commands send it.
    admin_token: str = ""
    # The stock service's own routes (reduceStock, voidFlag, returnStock, stockFlow) need
    # `Authorization: Bearer <this>` when it is set, and the order service and the reconcilers
    # send it: in a cluster, a host that reaches the port cannot deduct, void or return stock.
    # Empty (a single machine, bound to loopback): those routes are open.
    stock_service_token: str = ""

    log_level: str = "INFO"
    log_format: str = "text"  # or json: one JSON object per line, with the request id

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        program: str | None = None,
        **overrides: Any,
    ) -> Settings:
        """From the environment: every variable, or only those `program` reads (the others keep
        their defaults), validated as that program validates them."""
        env = os.environ if environ is None else environ
        read = None if program is None else PROGRAMS[program]
        values: dict[str, Any] = {}
        for f in fields(cls):
            if read is not None and f.name not in read:
                continue
            raw = env.get(f.name.upper())
            if raw is None:
                continue
            default = getattr(cls, f.name, None)
            try:
                if f.name in OPTIONAL_INTS:
                    values[f.name] = int(raw) if raw.strip() else None
                    continue
                values[f.name] = _convert(raw, default)
            except ValueError as exc:
                raise ValueError(f"{f.name.upper()}={raw!r}: {exc}") from exc
        values.update(overrides)
        settings = cls(**values)
        settings.validate(program)
        return settings

    def request_budget(self) -> float:
        """The longest one genOrder request can run once its order is written, in seconds,
        from these settings: its flag writes (each round within FLAG_WRITE_SECONDS, plus the
        write begun last, which may wait Redis's socket timeout), its reduceStock calls (each
        round within STOCK_CALL_BUDGET, plus the attempt begun last, which runs its whole
        timeout), the polls of the stock flow (the backoff, and one read's timeout each), the
        void, and a margin for the database steps. A reconciler that waits this long never
        races a request."""
        one_write = self.flag_write_seconds + REDIS_TIMEOUTS["socket_timeout"]
        one_call = self.stock_call_budget + self.stock_call_timeout
        reads = len(self.confirm_backoff) + 1
        polls = sum(self.confirm_backoff) + reads * self.stock_call_timeout
        return (
            FLAG_WRITES * one_write
            + FLAG_WRITES * one_call
            + polls
            + one_call  # the void
            + DATABASE_MARGIN_SECONDS
        )

    def reconcile_age(self) -> float:
        """How old an order must be before the reconciler settles it (seconds)."""
        if self.reconcile_older_than is None:
            return self.request_budget()
        return self.reconcile_older_than

    def election(self) -> str:
        """The coordination service of the elections (ELECTION_BACKEND, or its default)."""
        if self.election_backend:
            return self.election_backend
        return "etcd" if self.lock_backend == "etcd" else "zookeeper"

    def etcd_endpoint_list(self) -> list[str]:
        return [e.strip() for e in self.etcd_endpoints.split(",") if e.strip()]

    def redlock_url_list(self) -> list[str]:
        return [url.strip() for url in self.redlock_urls.split(",") if url.strip()]

    def with_(self, **changes: Any) -> Settings:
        updated = replace(self, **changes)
        updated.validate()
        return updated

    def validate(self, program: str | None = None) -> None:
        """Refuses bad values: those `program` reads (shared/config/program_settings.py), or all."""
        read = None if program is None else PROGRAMS[program]
        found = problems(self, read)
        if found:
            raise ValueError(found[0])


def _convert(raw: str, default: Any) -> Any:
    if default is None:  # an optional number: unset means computed (reconcile_age)
        return float(raw)
    if isinstance(default, bool):
        return _bool(raw)
    if isinstance(default, int):
        return int(raw)
    if isinstance(default, float):
        return float(raw)
    if isinstance(default, tuple):
        return _floats(raw)
    return raw
