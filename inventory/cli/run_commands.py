"""The commands that run something and report: demo (the order story, the herd, the fault
scenarios), loadtest and bench. Each that starts servers of its own does so in a temporary
home (inventory/local/homes.py), stops them however it ends, and removes the home unless --keep."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from inventory.cli.errors import UsageError
from inventory.local import homes, stack, stack_state
from inventory.local.databases import usable_url

if TYPE_CHECKING:
    from inventory.loadtest import LoadConfig

console = Console()


def cmd_demo(args: argparse.Namespace) -> int:
    homes.keep_homes = args.keep
    if args.scenario == "herd":
        return demo_herd(args)
    if args.scenario != "order":
        return demo_scenario(args)
    if args.unfenced:
        raise UsageError("--unfenced goes with a fault scenario (stale-holder, redlock, ...)")
    from inventory.scenarios.demo import run_demo

    state = stack_state.load_state()
    started_here = state is None or not stack_state.is_running(state)
    if started_here:
        console.print("starting the local stack (inventory up) ...")
        state = stack.up(say=console.print)
    assert state is not None
    try:
        return run_demo(state, console)
    finally:
        if started_here and not args.keep:
            stack.down(say=console.print)


def demo_scenario(args: argparse.Namespace) -> int:
    from rich.panel import Panel

    from inventory.scenarios import SCENARIOS, UNFENCED

    if args.unfenced and args.scenario not in UNFENCED:
        raise UsageError(f"--unfenced goes with the scenarios {', '.join(UNFENCED)}")
    run = SCENARIOS[args.scenario]
    console.rule(f"[bold]inventory demo {args.scenario}")
    result = run(console, unfenced=True) if args.unfenced else run(console)
    colour = "green" if result.ok else "red"
    console.print(Panel(f"[{colour}]{result.name}: {result.verdict}"))
    return 0 if result.ok else 1


def demo_herd(args: argparse.Namespace) -> int:
    from inventory.local.servers import start_zookeeper
    from inventory.scenarios.herd import compare, print_comparison

    state = stack_state.load_state()
    if state is not None and stack_state.is_running(state):
        rows = compare(state.zk_hosts, args.waiters, args.hold_ms / 1000)
    else:
        console.print("starting a ZooKeeper for the demo ...")
        with homes.temporary_home("herd", say=console.print) as home:
            server = start_zookeeper(home / "zookeeper")
            try:
                rows = compare(server.address, args.waiters, args.hold_ms / 1000)
            finally:
                server.stop()
    print_comparison(rows, console)
    # The herd effect holds when the single-node lock costs more per acquisition at scale.
    low, high = rows[-1]
    return 0 if low.per_acquisition[0] > high.per_acquisition[0] else 1


def cmd_loadtest(args: argparse.Namespace) -> int:
    from inventory.loadtest import LoadConfig

    config = LoadConfig(
        orders=args.orders,
        concurrency=args.concurrency,
        goods=args.goods,
        stock=args.stock,
        items=args.items,
        duplicate_ratio=args.duplicates,
        seed=args.seed,
        cancel_rate=args.cancel_rate,
        pay_within=args.pay_within,
    )
    if config.items > config.goods:
        raise UsageError(f"--items {config.items} is more than --goods {config.goods}")
    state = stack_state.load_state()
    own_stack = (
        args.lock is not None
        or args.scope is not None
        or state is None
        or not stack_state.is_running(state)
    )
    if not own_stack:
        assert state is not None
        return loadtest_on(state, config, args)
    env = {"LOCK_BACKEND": args.lock or "zookeeper", "LOCK_SCOPE": args.scope or "sku"}
    # Holds expire and unanswered cancels finish by the stack's own elected reconcilers.
    after_sale = bool(config.cancel_rate or config.pay_within)
    if after_sale:
        env.update(RECONCILE_INTERVAL="1", RECONCILE_OLDER_THAN="30")
    with homes.temporary_home("loadtest", keep=args.keep, say=console.print) as home:
        console.print(
            f"starting a stack for this run (lock {env['LOCK_BACKEND']}/{env['LOCK_SCOPE']}) ..."
        )
        try:
            state = stack.up(
                home=home, extra_env=env, say=console.print, reconcilers=2 if after_sale else 0
            )
        except stack.SettingsError as exc:
            raise UsageError(str(exc)) from exc
        try:
            return loadtest_on(state, config, args)
        finally:
            stack.down(home=home, say=console.print)


def loadtest_on(state: stack_state.StackState, config: LoadConfig, args: argparse.Namespace) -> int:
    from inventory.loadtest import print_summary, print_violations, run_loadtest, write_report

    result = run_loadtest(state, config, console)
    print_summary(result, state, console)
    if args.report:
        report, chart = write_report(result, state, Path(args.report))
        console.print(f"report: {report}   chart: {chart}")
    if not result.ok:
        print_violations(result, console)
        return 1
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    import os

    from inventory.bench import BenchConfig, print_report, run_bench, write_report

    if args.quick + args.order_path + args.auth > 1:
        raise UsageError("--quick, --order-path and --auth are presets: give one")
    if args.auth:
        return bench_auth()
    config = (
        BenchConfig.quick()
        if args.quick
        else BenchConfig.order_path()
        if args.order_path
        else BenchConfig()
    )
    for option in ("requests", "rounds", "concurrency"):
        value = getattr(args, option)
        if value is not None:
            setattr(config, option, value)
    config.database_url = args.database_url
    if config.database_url and config.database_url.startswith("sqlite"):
        raise UsageError("--database-url is for PostgreSQL or MySQL; SQLite is the default")
    if config.database_url:  # a typo is said now, not as a traceback once the bench has begun
        usable_url(config.database_url, "--database-url")
    config.keep = args.keep
    env = {k: os.environ[k] for k in ("ZK_HOSTS", "REDIS_URL") if os.environ.get(k)}
    report = run_bench(config, env, say=console.print)
    print_report(report, console)
    if args.report:
        data, chart = write_report(report, Path(args.report))
        console.print(f"report: {data}   chart: {chart}")
    return 0 if not any(m.errors for m in report.reduce + report.gen_order) else 1


def bench_auth() -> int:
    from rich.table import Table

    from inventory.bench import auth_cost

    pairs = auth_cost.run(say=console.print)
    table = Table(
        "part", "operation (without vs with)", "without /s", "with /s", "ratio", "extra µs/op"
    )
    for p in pairs:
        table.add_row(
            p.part,
            p.what,
            f"{p.open_rate:,.0f}",
            f"{p.auth_rate:,.0f}",
            f"{p.ratio:.2f}",
            f"{p.extra_us:+.0f}",
        )
    console.print(table)
    return 0
