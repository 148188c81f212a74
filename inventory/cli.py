"""The `inventory` command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from rich.console import Console

from inventory import stack

console = Console()

# Named here rather than imported, so `inventory --help` does not load the scenarios.
SCENARIO_NAMES = [
    "double-submit",
    "slow-stock",
    "lost-response",
    "redis-flag-lost",
    "stale-holder",
    "crash-mid-deduction",
    "zk-leader-loss",
]


def cmd_up(args: argparse.Namespace) -> int:
    state = stack.up(workers=args.workers, threads=args.threads, say=console.print)
    print_status(state, as_json=False)
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    stack.down(say=console.print)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    state = stack.load_state()
    if state is None:
        if args.json:
            print(json.dumps({"running": False}))
        else:
            console.print("no stack running (start one with: inventory up)")
        return 1
    print_status(state, as_json=args.json)
    return 0 if stack.is_running(state) else 1


def print_status(state: stack.StackState, as_json: bool) -> None:
    data = state.as_json()
    if as_json:
        print(json.dumps(data, indent=2))
        return
    console.print(f"order service   {state.order_url}")
    console.print(f"stock service   {state.stock_url}")
    console.print(f"zookeeper       {state.zk_hosts}")
    console.print(f"redis           {state.redis_url}")
    console.print(f"order database  {state.order_database_url}")
    console.print(f"stock database  {state.stock_database_url}")
    console.print(f"lock            {state.lock_backend} / {state.lock_scope}")
    running = ", ".join(f"{n}={'up' if alive else 'DOWN'}" for n, alive in data["running"].items())
    console.print(f"processes       {running or '(none started by inventory up)'}")


def cmd_seed(args: argparse.Namespace) -> int:
    from inventory.client import StackClient

    state = require_stack()
    client = StackClient(state)
    try:
        for pair in args.levels:
            goods_id, _, num = pair.partition("=")
            if not num.isdigit():
                console.print(f"[red]not GOODS=NUM: {pair}")
                return 2
            row = client.seed(goods_id, int(num))
            console.print(f"{goods_id} = {row['num']} (seed version {row['seedVersion']})")
    finally:
        client.close()
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    import os

    import migrations

    for history, var in (("order", "ORDER_DATABASE_URL"), ("stock", "STOCK_DATABASE_URL")):
        url = os.environ.get(var, f"sqlite:///{history}.db")
        migrations.upgrade(url, history)
        console.print(f"{history} database at head: {url}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    if args.scenario == "herd":
        return demo_herd(args)
    if args.scenario != "order":
        return demo_scenario(args)
    from inventory.demo import run_demo

    state = stack.load_state()
    started_here = state is None or not stack.is_running(state)
    if started_here:
        console.print("starting the local stack (inventory up) ...")
        state = stack.up(say=console.print)
    assert state is not None
    try:
        return run_demo(state, console)
    finally:
        if started_here and not args.keep:
            stack.down(say=console.print)


def cmd_check(args: argparse.Namespace) -> int:
    import os

    from inventory.check import print_results, results_json, run_check

    state = stack.load_state()
    order_url = (
        args.order_db
        or os.environ.get("ORDER_DATABASE_URL")
        or (state.order_database_url if state else None)
    )
    stock_url = (
        args.stock_db
        or os.environ.get("STOCK_DATABASE_URL")
        or (state.stock_database_url if state else None)
    )
    if not order_url or not stock_url:
        console.print(
            "[red]no databases: give --order-db and --stock-db, set "
            "ORDER_DATABASE_URL and STOCK_DATABASE_URL, or run `inventory up`"
        )
        return 2
    initial = parse_levels(args.initial or [])
    results = run_check(order_url, stock_url, goods_prefix=args.goods_prefix, initial=initial)
    if args.json:
        print(json.dumps(results_json(results), indent=2))
    else:
        print_results(results, console)
    return 0 if all(r.ok for r in results) else 1


def parse_levels(pairs: list[str]) -> dict[str, int]:
    levels = {}
    for pair in pairs:
        goods_id, _, num = pair.partition("=")
        if not goods_id or not num.isdigit():
            raise SystemExit(f"not GOODS=NUM: {pair}")
        levels[goods_id] = int(num)
    return levels


def cmd_loadtest(args: argparse.Namespace) -> int:
    import tempfile
    from pathlib import Path

    from inventory.loadtest import (
        LoadConfig,
        print_summary,
        print_violations,
        run_loadtest,
        write_report,
    )

    config = LoadConfig(
        orders=args.orders,
        concurrency=args.concurrency,
        goods=args.goods,
        stock=args.stock,
        items=args.items,
        duplicate_ratio=args.duplicates,
        seed=args.seed,
    )
    state = stack.load_state()
    own_stack = (
        args.lock is not None
        or args.scope is not None
        or state is None
        or not stack.is_running(state)
    )
    if own_stack:
        home = Path(tempfile.mkdtemp(prefix="inventory-loadtest-"))
        env = {"LOCK_BACKEND": args.lock or "zookeeper", "LOCK_SCOPE": args.scope or "sku"}
        console.print(
            f"starting a stack for this run (lock {env['LOCK_BACKEND']}/"
            f"{env['LOCK_SCOPE']}) in {home} ..."
        )
        state = stack.up(home=home, extra_env=env, say=console.print)
    assert state is not None
    try:
        result = run_loadtest(state, config, console)
    finally:
        if own_stack:
            stack.down(home=Path(state.home), say=console.print)
    print_summary(result, state, console)
    if args.report:
        report, chart = write_report(result, state, Path(args.report))
        console.print(f"report: {report}   chart: {chart}")
    if not result.ok:
        print_violations(result, console)
        return 1
    return 0


def demo_scenario(args: argparse.Namespace) -> int:
    from rich.panel import Panel

    from inventory.scenarios import SCENARIOS

    run = SCENARIOS[args.scenario]
    console.rule(f"[bold]inventory demo {args.scenario}")
    result = run(console, unfenced=True) if args.unfenced else run(console)
    colour = "green" if result.ok else "red"
    console.print(Panel(f"[{colour}]{result.name}: {result.verdict}"))
    return 0 if result.ok else 1


def demo_herd(args: argparse.Namespace) -> int:
    import tempfile
    from pathlib import Path

    from inventory.herd import compare, print_comparison
    from inventory.servers import start_zookeeper

    state = stack.load_state()
    server = None
    if state is not None and stack.is_running(state):
        hosts = state.zk_hosts
    else:
        console.print("starting a ZooKeeper for the demo ...")
        server = start_zookeeper(Path(tempfile.mkdtemp(prefix="inventory-herd-")))
        hosts = server.address
    try:
        rows = compare(hosts, args.waiters, args.hold_ms / 1000)
    finally:
        if server:
            server.stop()
    print_comparison(rows, console)
    # The herd effect holds when the single-node lock costs more per acquisition at scale.
    low, high = rows[-1]
    return 0 if low.per_acquisition[0] > high.per_acquisition[0] else 1


def cmd_bench(args: argparse.Namespace) -> int:
    import os
    from pathlib import Path

    from inventory.bench import BenchConfig, print_report, run_bench, write_report

    config = BenchConfig.quick() if args.quick else BenchConfig()
    for option in ("requests", "rounds", "concurrency"):
        value = getattr(args, option)
        if value is not None:
            if value < 1:
                console.print(f"--{option} must be at least 1")
                return 2
            setattr(config, option, value)
    config.database_url = args.database_url
    config.keep = args.keep
    env = {k: os.environ[k] for k in ("ZK_HOSTS", "REDIS_URL") if os.environ.get(k)}
    report = run_bench(config, env, say=console.print)
    print_report(report, console)
    if args.report:
        data, chart = write_report(report, Path(args.report))
        console.print(f"report: {data}   chart: {chart}")
    return 0 if not any(m.errors for m in report.reduce + report.gen_order) else 1


def cmd_reconcile(args: argparse.Namespace) -> int:
    import os
    from datetime import timedelta

    from order_service.reconcile import reconcile
    from order_service.stock_client import StockClient
    from order_service.store import OrderStore
    from shared.db import make_engine
    from shared.settings import Settings

    state = stack.load_state()
    env = {**(state.env() if state else {}), **os.environ}
    settings = Settings.from_env(env)
    store = OrderStore(make_engine(settings.order_database_url))
    stock = StockClient(settings.stock_service_url, settings.stock_call_timeout, 0, 60, 0)
    try:
        report = reconcile(
            store,
            stock,
            timedelta(seconds=args.older_than),
            timedelta(hours=args.horizon_hours),
            timedelta(seconds=settings.flag_ttl),
        )
    finally:
        stock.close()
        store.engine.dispose()
    console.print(
        f"examined {report.examined} PENDING/FAILED orders: "
        f"{len(report.confirmed)} confirmed (deducted late), "
        f"{len(report.failed)} failed (flag expired, no flow), "
        f"{len(report.mismatched)} with flows that differ from their lines, "
        f"{report.unreachable} not checked (stock service unreachable)"
    )
    return 1 if report.mismatched or report.unreachable else 0


def require_stack() -> stack.StackState:
    state = stack.load_state()
    if state is None or not stack.is_running(state):
        console.print("[red]no stack running: start one with `inventory up`")
        raise SystemExit(1)
    return state


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="inventory", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("up", help="start the local stack in the background")
    p.add_argument("--workers", type=int, default=2, help="gunicorn workers per service")
    p.add_argument("--threads", type=int, default=8, help="threads per stock-service worker")
    p.set_defaults(func=cmd_up)
    sub.add_parser("down", help="stop what `up` started").set_defaults(func=cmd_down)
    p = sub.add_parser("status", help="URLs and addresses of the running stack")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_status)
    p = sub.add_parser("seed", help="set stock levels: inventory seed g1=100 g2=5")
    p.add_argument("levels", nargs="+", metavar="GOODS=NUM")
    p.set_defaults(func=cmd_seed)
    sub.add_parser(
        "migrate", help="migrate ORDER_DATABASE_URL and STOCK_DATABASE_URL to head"
    ).set_defaults(func=cmd_migrate)
    p = sub.add_parser(
        "demo", help="the POST /genOrder demo (starts the stack if needed), or a scenario"
    )
    p.add_argument(
        "scenario",
        nargs="?",
        default="order",
        choices=["order", "herd", *SCENARIO_NAMES],
        help="order: one order end to end (default); herd: the article's herd effect; "
        "the others cause a fault for real (see the README)",
    )
    p.add_argument(
        "--unfenced",
        action="store_true",
        help="stale-holder: with fencing off, to show the oversell it prevents",
    )
    p.add_argument("--keep", action="store_true", help="leave a stack it started running")
    p.add_argument(
        "--waiters",
        type=int,
        nargs="+",
        default=[5, 10, 20],
        help="herd: numbers of waiters to compare",
    )
    p.add_argument("--hold-ms", type=float, default=10, help="herd: how long each holder holds")
    p.set_defaults(func=cmd_demo)
    p = sub.add_parser("check", help="check the invariants I1-I5 on the databases")
    p.add_argument(
        "--order-db",
        help="order database URL (default: ORDER_DATABASE_URL, else the running stack's)",
    )
    p.add_argument(
        "--stock-db",
        help="stock database URL (default: STOCK_DATABASE_URL, else the running stack's)",
    )
    p.add_argument("--goods-prefix", default="", help="only goods ids starting with this")
    p.add_argument(
        "--initial",
        nargs="*",
        metavar="GOODS=NUM",
        help="initial levels (default: the last seeded level of each goods id)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("loadtest", help="many buyers over HTTP, then the invariant check")
    p.add_argument("--orders", type=int, default=200)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--goods", type=int, default=1, help="goods ids")
    p.add_argument("--stock", type=int, default=40, help="initial stock per goods id")
    p.add_argument("--items", type=int, default=1, help="goods ids per order")
    p.add_argument(
        "--duplicates",
        type=float,
        default=0.0,
        help="share of orders submitted twice with one Idempotency-Key (0-1)",
    )
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--lock",
        choices=["zookeeper", "redis", "database", "none"],
        help="start a stack for the run with this LOCK_BACKEND",
    )
    p.add_argument(
        "--scope", choices=["sku", "global"], help="start a stack for the run with this LOCK_SCOPE"
    )
    p.add_argument("--report", metavar="DIR", help="write loadtest.json and loadtest.png here")
    p.set_defaults(func=cmd_loadtest)
    p = sub.add_parser("reconcile", help="settle orders whose flows appeared after the request")
    p.add_argument(
        "--older-than",
        type=float,
        default=60,
        help="only orders older than this many seconds (default 60)",
    )
    p.add_argument(
        "--horizon-hours",
        type=float,
        default=24,
        help="only orders younger than this many hours (default 24)",
    )
    p.set_defaults(func=cmd_reconcile)

    p = sub.add_parser("bench", help="throughput and latency against the limits of the parts")
    p.add_argument(
        "--quick", action="store_true", help="fewer requests and configurations (about 2 minutes)"
    )
    p.add_argument("--requests", type=int, help="requests per load per round")
    p.add_argument("--rounds", type=int, help="rounds; rates are their median (default 3)")
    p.add_argument("--concurrency", type=int, help="concurrent callers (default 16)")
    p.add_argument(
        "--database-url",
        metavar="URL",
        help="a PostgreSQL or MySQL server (e.g. postgresql+psycopg://postgres@127.0.0.1/test): "
        "the bench makes a database of its own there and drops it afterwards; default SQLite",
    )
    p.add_argument("--keep", action="store_true", help="keep the bench's folder (logs)")
    p.add_argument("--report", metavar="DIR", help="write bench.json and bench.png here")
    p.set_defaults(func=cmd_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import logging

    # The command's own clients see servers stop on purpose; their reconnect warnings are noise.
    logging.getLogger("kazoo.client").setLevel(logging.ERROR)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a clear line for the user, not a traceback
        from inventory.servers import ServerError

        if isinstance(exc, ServerError):
            console.print(f"[red]{exc}")
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
