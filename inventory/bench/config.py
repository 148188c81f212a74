"""What a bench run measures: its sizes (BenchConfig, with the quick and smoke presets) and the
stack configurations it compares (a lock backend, a scope, combining on or off, the outbox of
stock events on or off)."""

from __future__ import annotations

from dataclasses import dataclass

from inventory.bench.measures import COMBINING, NO_LOCK, label


@dataclass
class BenchConfig:
    requests: int = 1200  # per load, per round
    concurrency: int = 16
    rounds: int = 3
    limit_seconds: float = 3.0  # per limit, split into three rounds
    warmup_seconds: float = 8.0
    spread_goods: int = 100
    backends: tuple[str, ...] = (
        "zookeeper",
        "redis",
        "etcd",
        "redlock",
        "database",
        "unique-key",
        NO_LOCK,
    )
    global_scope: bool = True  # also LOCK_SCOPE=global for ZooKeeper
    one_at_a_time: bool = True  # each backend also with DEDUCT_BATCH_MAX=1
    database_url: str | None = None  # a server; the bench makes a database of its own there
    peer: bool = True  # the one-database peer beside genOrder (inventory/bench/peer/)
    # Also the ZooKeeper stack with combining with STOCK_EVENTS=false (no outbox row written
    # with each ledger line), reduceStock and genOrder, beside the same stack with them.
    outbox_off: bool = False
    # reduceStock and genOrder on the hot goods id with one caller, per round, on the default
    # stack (0: none): what a lone request costs, against a member of a batch.
    lone_requests: int = 300
    keep: bool = False

    @classmethod
    def quick(cls) -> BenchConfig:
        return cls(
            requests=600,
            limit_seconds=1.5,
            warmup_seconds=5.0,
            backends=("zookeeper", "redis", "etcd", "redlock", "database", "unique-key", NO_LOCK),
            global_scope=False,
        )

    @classmethod
    def order_path(cls) -> BenchConfig:
        """What the order a buyer places costs, next to the deduction it exists for and next to
        the one-database peer: the ZooKeeper stack with combining, the no-lock baseline and
        the peer only (a few minutes)."""
        return cls(
            requests=1500,
            limit_seconds=1.5,
            warmup_seconds=5.0,
            backends=("zookeeper", NO_LOCK),
            global_scope=False,
            one_at_a_time=False,
            outbox_off=True,
        )

    @classmethod
    def smoke(cls) -> BenchConfig:
        return cls(
            requests=12,
            concurrency=4,
            rounds=1,
            limit_seconds=0.3,
            warmup_seconds=0.2,
            spread_goods=5,
            backends=("zookeeper", NO_LOCK),
            outbox_off=True,
            lone_requests=6,
        )


@dataclass(frozen=True)
class StackConfig:
    backend: str
    scope: str = "sku"
    batch_max: int = COMBINING
    events: bool = True  # STOCK_EVENTS: each ledger line's events written to the outbox

    @property
    def label(self) -> str:
        return label(self.backend, self.scope, self.batch_max, self.events)

    @property
    def orders(self) -> bool:
        """POST /genOrder is measured on it too: the ZooKeeper stack with combining, with the
        outbox and without."""
        return (self.backend, self.scope, self.batch_max) == ("zookeeper", "sku", COMBINING)

    def env(self) -> dict[str, str]:
        return {
            "LOCK_BACKEND": self.backend,
            "LOCK_SCOPE": self.scope,
            "DEDUCT_BATCH_MAX": str(self.batch_max),
            "STOCK_EVENTS": "true" if self.events else "false",
        }


def stack_configs(config: BenchConfig, database: str, notes: list[str]) -> list[StackConfig]:
    out = []
    for backend in config.backends:
        if backend == NO_LOCK:
            out.append(StackConfig(NO_LOCK, batch_max=1))
            continue
        if backend == "database" and database == "sqlite":
            notes.append(
                "database lock skipped: SQLite has no row locks (--database-url names a "
                "PostgreSQL or MySQL server to include it)"
            )
            continue
        scopes = ("sku", "global") if config.global_scope and backend == "zookeeper" else ("sku",)
        for scope in scopes:
            out.append(StackConfig(backend, scope, COMBINING))
            if config.outbox_off and backend == "zookeeper" and scope == "sku":
                out.append(StackConfig(backend, scope, COMBINING, events=False))
            if config.one_at_a_time:
                out.append(StackConfig(backend, scope, 1))
    return out
