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
   by process (order service, stock service, ZooKeeper, Redis, and the client on its own),
   and the batches of both sides from the services' metrics (orders per order-side batch,
   requests per lock hold; batches.py). On the default stack, the same hot goods id with one
   caller too, reduceStock and genOrder: what a lone request costs, beside a member's share.
   With `outbox_off` (--order-path), the same stack with STOCK_EVENTS=false takes a turn of its
   own in the rotation, reduceStock and genOrder: what writing the outbox costs. (The bench's
   stacks run no relay: the cost is the outbox rows written in the deduction's commit.)
5. The one-database peer (peer/: one Flask app, one transaction per order, no lock service,
   no Redis, no second service), a turn of its own in the same rotation: the same POST
   /genOrder load on one hot goods id and on `spread_goods` ids, with the same client and
   gunicorn shape (2 workers x 8 threads), on the same database server.
On PostgreSQL every load's CPU also counts the backends of the bench's own database, by
application (pg_cpu.py). Everything it starts, it stops; its folder is removed unless `keep`
is set.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import sqlalchemy as sa

import migrations
from inventory.bench.config import BenchConfig, StackConfig, stack_configs
from inventory.bench.limits import measure_limits, warm_up_zookeeper
from inventory.bench.measures import PEER
from inventory.bench.pg_cpu import DatabaseCpu
from inventory.bench.report import BenchReport
from inventory.bench.turns import ORDER, REDUCE, Tallies, peer_turn, stack_turn
from inventory.local import stack, stack_state
from inventory.local.etcd_server import start_etcd
from inventory.local.homes import temporary_home
from inventory.local.servers import ServerProcess, start_redis, start_zookeeper


def run_bench(config: BenchConfig, env: dict[str, str], say: Any = print) -> BenchReport:
    """`env` may name ZK_HOSTS, REDIS_URL and ETCD_ENDPOINTS; what it does not name is
    started here."""
    with temporary_home("bench", keep=config.keep, say=say) as home:
        return _run_bench(home, config, env, say)


def _run_bench(home: Path, config: BenchConfig, env: dict[str, str], say: Any) -> BenchReport:
    own: list[ServerProcess] = []
    running: list[stack_state.StackState] = []
    drop_database = None
    database: DatabaseCpu | None = None
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
        if "STOCK_DATABASE_URL" in env:
            database, how = DatabaseCpu.of(env["STOCK_DATABASE_URL"])
            if how:
                report.notes.append(how)

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
        # The peer is measured where genOrder is: a turn of its own in the same rotation.
        turns: list[StackConfig | str] = [*configs]
        if config.peer and StackConfig("zookeeper") in configs:
            turns.append(PEER)
        tallies = Tallies()
        for round_no in range(config.rounds):
            shift = round_no % len(turns)
            for turn in turns[shift:] + turns[:shift]:
                if isinstance(turn, str):
                    say(f"round {round_no + 1} of {config.rounds}: {PEER} ...")
                    peer_turn(home, config, env, database, round_no, tallies.peer)
                    continue
                stack_config = turn
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
                    stack_turn(state, config, stack_config, own, database, round_no, tallies)
                finally:
                    stack.down(home=Path(state.home), say=lambda *_: None)
                    running.remove(state)
        _tally_up(report, configs, config.spread_goods, tallies)
        if database is not None:
            seen = database.attribution
            report.notes.append(
                f"PostgreSQL backends: {len(seen.seen)} seen over {seen.samples} samples, "
                f"{seen.exited} exited during a load (counted up to their last sample)"
            )
        return report
    finally:
        for state in running:
            stack.down(home=Path(state.home), say=lambda *_: None)
        for server in own:
            server.stop()
        if database is not None:
            database.close()
        if drop_database:
            drop_database()


def _tally_up(
    report: BenchReport, configs: list[StackConfig], spread: int, tallies: Tallies
) -> None:
    for stack_config in configs:
        for goods_count in (1, spread):
            name = f"reduceStock {stack_config.label}, {goods_count} goods"
            tally = tallies.reduce[(stack_config, goods_count)]
            report.reduce.append(tally.measure(name, stack_config.label, goods_count))
    # The stack with the outbox first (sorted: its label is the other's prefix).
    for (config_label, goods_count), tally in sorted(tallies.orders.items()):
        name = f"genOrder {config_label}, {goods_count} goods"
        report.gen_order.append(tally.measure(name, config_label, goods_count))
    for goods_count, tally in sorted(tallies.peer.items()):
        name = f"{PEER}, {goods_count} goods"
        report.peer.append(tally.measure(name, PEER, goods_count))
    default = StackConfig("zookeeper").label
    for call in (REDUCE, ORDER):
        if call in tallies.lone:
            name = f"{call} {default}, 1 goods, 1 caller"
            report.lone.append(tallies.lone[call].measure(name, default, 1, callers=1))


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
