"""`inventory bench`: what the deduction path costs, against the limits of its parts, measured
side by side in one run.

1. ZooKeeper is warmed up (its JIT), then the limits of the parts are measured.
2. Configurations: each lock backend with combining (DEDUCT_BATCH_MAX=32) and with one lock
   hold per request (=1), and the no-lock baseline.
3. Rounds: in each, every configuration in turn gets a stack of its own (started, warmed up,
   stopped after its turn) and takes a PUT /reduceStock load on one hot goods id and on
   `spread_goods` ids; the order of the configurations rotates from round to round, so slow
   drifts of a shared machine fall on every configuration alike. Rates are the median of the
   rounds; latency percentiles and batch sizes pool every round's answers.
4. POST /genOrder end to end, on the ZooKeeper stack with combining, in each round, on one hot
   goods id and on `spread_goods` ids, next to that stack's reduceStock: the CPU of each order
   by process (order service, stock service, ZooKeeper, Redis, and the client on its own).
Everything it starts, it stops; its folder is removed unless `keep` is set.
"""

from __future__ import annotations

import os
import statistics
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa

import migrations
from inventory.bench.config import BenchConfig, StackConfig, stack_configs
from inventory.bench.limits import measure_limits, warm_up_zookeeper
from inventory.bench.loads import (
    LoadResult,
    order_load,
    reduce_calls,
    reduce_load,
    seed_goods,
    stage_medians,
)
from inventory.bench.report import COMBINING, BenchReport, Measure, label
from inventory.load.cpu import snapshot
from inventory.local import stack, stack_state
from inventory.local.etcd_server import start_etcd
from inventory.local.homes import temporary_home
from inventory.local.servers import ServerProcess, start_redis, start_zookeeper


@dataclass
class _Tally:
    """Every round of one (configuration, goods count)."""

    rates: list[float] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    batch_sizes: list[int] = field(default_factory=list)
    stages: dict[str, list[float]] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)
    requests: int = 0
    errors: int = 0

    def add(self, result: LoadResult, cpu: dict[str, float]) -> None:
        self.rates.append(result.run.per_second)
        self.latencies += result.latencies
        self.batch_sizes += result.batch_sizes
        for stage, values in result.stages.items():
            self.stages.setdefault(stage, []).extend(values)
        for name, seconds in cpu.items():
            self.cpu[name] = self.cpu.get(name, 0.0) + seconds
        self.requests += len(result.run.answers)
        self.errors += len(result.run.answers) - result.ok

    def measure(self, name: str, config: str, goods: int) -> Measure:
        """CPU per successful request (a confirmed order, a deduction), by process."""
        succeeded = max(self.requests - self.errors, 1)
        return Measure(
            name,
            statistics.median(self.rates),
            [round(r, 1) for r in self.rates],
            percentile_ms(self.latencies, 50),
            percentile_ms(self.latencies, 99),
            round(statistics.fmean(self.batch_sizes), 2) if self.batch_sizes else None,
            float(percentile(self.batch_sizes, 99)) if self.batch_sizes else None,
            stage_medians(self.stages),
            {k: round(v * 1000 / succeeded, 2) for k, v in self.cpu.items()},
            self.errors,
            config,
            goods,
        )


def percentile(values: list[Any], p: float) -> Any:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def percentile_ms(values: list[float], p: float) -> float | None:
    return round(percentile(values, p) * 1000, 2) if values else None


def run_bench(config: BenchConfig, env: dict[str, str], say: Any = print) -> BenchReport:
    """`env` may name ZK_HOSTS, REDIS_URL and ETCD_ENDPOINTS; what it does not name is
    started here."""
    with temporary_home("bench", keep=config.keep, say=say) as home:
        return _run_bench(home, config, env, say)


def _run_bench(home: Path, config: BenchConfig, env: dict[str, str], say: Any) -> BenchReport:
    own: list[ServerProcess] = []
    running: list[stack_state.StackState] = []
    drop_database = None
    try:
        if not env.get("ZK_HOSTS"):
            own.append(start_zookeeper(home / "zookeeper"))  # fsync on, as in the stack
            env["ZK_HOSTS"] = own[-1].address
        if not env.get("REDIS_URL"):
            own.append(start_redis(home / "redis"))
            env["REDIS_URL"] = f"redis://{own[-1].address}/0"
        if "etcd" in config.backends and not env.get("ETCD_ENDPOINTS"):
            own.append(start_etcd(home / "etcd"))
            env["ETCD_ENDPOINTS"] = f"http://{own[-1].address}"
        if config.database_url:
            url, drop_database = throwaway_database(config.database_url)
            say(f"using database {sa.make_url(url).render_as_string()} (dropped afterwards)")
            env["ORDER_DATABASE_URL"] = env["STOCK_DATABASE_URL"] = url
            migrations.upgrade(url, "order")
            migrations.upgrade(url, "stock")
        stock_db = env.get("STOCK_DATABASE_URL") or f"sqlite:///{home / 'limits.db'}"
        if "STOCK_DATABASE_URL" not in env:
            migrations.upgrade(stock_db, "stock")
        report = BenchReport(
            sa.make_url(stock_db).get_backend_name(), config.concurrency, config.rounds
        )

        say(f"warming up ZooKeeper ({config.warmup_seconds:.0f} s) ...")
        warm_up_zookeeper(env["ZK_HOSTS"], config.warmup_seconds)
        say("measuring the limits of the parts ...")
        report.limits = measure_limits(
            env["ZK_HOSTS"],
            env["REDIS_URL"],
            stock_db,
            config.limit_seconds,
            env.get("ETCD_ENDPOINTS") if "etcd" in config.backends else None,
        )

        configs = stack_configs(config, report.database, report.notes)
        tallies: dict[tuple[StackConfig, int], _Tally] = {}
        order_tallies: dict[int, _Tally] = {}
        for round_no in range(config.rounds):
            shift = round_no % len(configs)
            for stack_config in configs[shift:] + configs[:shift]:
                say(f"round {round_no + 1} of {config.rounds}: {stack_config.label} ...")
                # One stack at a time: nine stacks' connection pools would exceed a
                # PostgreSQL's 100 connections, and idle stacks are noise on 2 cores.
                state = stack.up(
                    home=home
                    / f"r{round_no}-{stack_config.label.replace('/', '-').replace(' ', '-')}",
                    extra_env={**env, **stack_config.env()},
                    say=lambda *_: None,
                )
                running.append(state)
                try:
                    goods = _seed_and_warm_up(state, config, stack_config)
                    for goods_count in (1, config.spread_goods):
                        tally = tallies.setdefault((stack_config, goods_count), _Tally())
                        chosen = goods[goods_count]
                        tally.add(*_reduce_round(state, own, config, chosen, round_no))
                    if stack_config == StackConfig("zookeeper"):
                        for goods_count in (1, config.spread_goods):
                            tally = order_tallies.setdefault(goods_count, _Tally())
                            tally.add(
                                *_order_round(state, own, config, goods[goods_count], round_no)
                            )
                finally:
                    stack.down(home=Path(state.home), say=lambda *_: None)
                    running.remove(state)

        for stack_config in configs:
            for goods_count in (1, config.spread_goods):
                name = f"reduceStock {stack_config.label}, {goods_count} goods"
                tally = tallies[(stack_config, goods_count)]
                report.reduce.append(tally.measure(name, stack_config.label, goods_count))
        zookeeper = label("zookeeper", "sku", COMBINING)
        for goods_count, tally in sorted(order_tallies.items()):
            name = f"genOrder {zookeeper}, {goods_count} goods"
            report.gen_order.append(tally.measure(name, zookeeper, goods_count))
        return report
    finally:
        for state in running:
            stack.down(home=Path(state.home), say=lambda *_: None)
        for server in own:
            server.stop()
        if drop_database:
            drop_database()


def _seed_and_warm_up(
    state: stack_state.StackState, config: BenchConfig, stack_config: StackConfig
) -> dict[int, list[str]]:
    """The goods of each load, the same ids in every round (a catalogue's lock paths and lock
    rows outlive any one run, so their first use is not measured), and a short load over all
    of them first: connection pools, compiled statements, the lock paths known to exist."""
    prefix = "bench-" + stack_config.label.replace("/", "-").replace(" ", "-")
    goods = {
        1: seed_goods(state, 1, f"{prefix}-hot-"),
        config.spread_goods: seed_goods(state, config.spread_goods, f"{prefix}-spread-"),
    }
    everything = goods[1] + goods[config.spread_goods]
    calls = reduce_calls(state.redis_url, everything, max(2 * len(everything), 64), seed=0)
    reduce_load(state, calls, config.concurrency)
    if stack_config == StackConfig("zookeeper"):  # the order path is measured on it: warm it
        order_load(state, everything, max(2 * len(everything), 64), config.concurrency)
    return goods


def _pids(
    state: stack_state.StackState, own: list[ServerProcess], services: tuple[str, ...]
) -> dict[str, int]:
    pids = {name: state.pids[name] for name in services}
    pids.update({server.name: server.pid for server in own})
    pids["load"] = os.getpid()
    return pids


def _reduce_round(
    state: stack_state.StackState,
    own: list[ServerProcess],
    config: BenchConfig,
    goods: list[str],
    round_no: int,
) -> tuple[LoadResult, dict[str, float]]:
    calls = reduce_calls(state.redis_url, goods, config.requests, seed=round_no)
    pids = _pids(state, own, ("stock_service",))
    before = snapshot(pids, alone=frozenset({"load"}))
    result = reduce_load(state, calls, config.concurrency)
    after = snapshot(pids, alone=frozenset({"load"}))
    return result, {name: after[name] - before[name] for name in pids}


def _order_round(
    state: stack_state.StackState,
    own: list[ServerProcess],
    config: BenchConfig,
    goods: list[str],
    round_no: int,
) -> tuple[LoadResult, dict[str, float]]:
    """POST /genOrder, one unit of one of `goods` each (the goods reduceStock used, stocked
    far above any run's demand, so every order is confirmed)."""
    pids = _pids(state, own, ("stock_service", "order_service"))
    before = snapshot(pids, alone=frozenset({"load"}))
    result = order_load(state, goods, config.requests, config.concurrency)
    after = snapshot(pids, alone=frozenset({"load"}))
    return result, {name: after[name] - before[name] for name in pids}


def throwaway_database(server_url: str) -> tuple[str, Any]:
    """A database of the bench's own on that server (PostgreSQL or MySQL), and how to drop it:
    the bench never writes into a database it did not make."""
    admin_url = sa.make_url(server_url)
    name = f"inv_bench_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f"CREATE DATABASE {name}"))
    finally:
        admin.dispose()

    def drop() -> None:
        engine = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as conn:
                force = " WITH (FORCE)" if admin_url.get_backend_name() == "postgresql" else ""
                conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name}{force}"))
        finally:
            engine.dispose()

    return admin_url.set(database=name).render_as_string(hide_password=False), drop
