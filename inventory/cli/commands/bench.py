"""`inventory bench`: throughput and latency against the limits of the parts
(inventory/bench/ measures and reports)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from inventory.cli.errors import UsageError
from inventory.cli.options import at_least
from inventory.local.databases import usable_url

NAME = "bench"
SUMMARY = "throughput and latency against the limits of the parts"

console = Console()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    p = parser
    p.add_argument(
        "--quick",
        action="store_true",
        # 6-8 minutes on 2 cores, as measured (each backend twice, 3 rounds, fresh stacks).
        help="fewer requests and configurations (about 6-8 minutes on 2 cores)",
    )
    p.add_argument(
        "--order-path",
        action="store_true",
        help="only what an order costs: POST /genOrder next to PUT /reduceStock on the "
        "ZooKeeper stack, the no-lock baseline and the one-database peer, with the four "
        "goals against the peer met or missed (a few minutes)",
    )
    p.add_argument(
        "--auth",
        action="store_true",
        help="only what authentication and TLS cost: ZooKeeper digest and TLS, Redis ACL users, "
        "TLS and its SSL context, PostgreSQL scram-sha-256 and TLS, the stock service's token, "
        "each with and without, and a Redis Sentinel failover timed (a few minutes)",
    )
    p.add_argument(
        "--requests",
        type=at_least(1),
        help="requests per load per round (default 1200; --quick 600; --order-path 1500)",
    )
    p.add_argument("--rounds", type=at_least(1), help="rounds; rates are their median (default 3)")
    p.add_argument("--concurrency", type=at_least(1), help="concurrent callers (default 16)")
    p.add_argument(
        "--database-url",
        metavar="URL",
        help="a PostgreSQL or MySQL server to run on instead of SQLite (e.g. "
        "postgresql+psycopg://postgres@127.0.0.1:5432/test): the bench creates a database of "
        "its own there, migrates and fills it, and drops it afterwards",
    )
    p.add_argument(
        "--callers",
        metavar="N,N,...",
        help="with --order-path: genOrder on the hot goods id at each of these caller counts "
        "(e.g. 16,64,256) on the flow and on the peer, each side's saturation and the ratio "
        "there beside the first count's (inventory/bench/saturation.py)",
    )
    p.add_argument(
        "--code",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="with --callers: the flow's stack runs the code of this checkout (repeatable: "
        "each a side of its own, side by side); run from a folder outside the checkouts",
    )
    p.add_argument("--keep", action="store_true", help="keep the bench's folder (logs)")
    p.add_argument("--report", metavar="DIR", help="write bench.json and bench.png here")


def run(args: argparse.Namespace) -> int:
    import os

    from inventory.bench import BenchConfig, print_report, run_bench, write_report

    if args.quick + args.order_path + args.auth > 1:
        raise UsageError("--quick, --order-path and --auth are presets: give one")
    if args.auth:
        return auth()
    if args.callers:
        return saturation(args)
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
    measured = report.reduce + report.gen_order + report.peer
    return 0 if not any(m.errors for m in measured) else 1


def saturation(args: argparse.Namespace) -> int:
    """`--order-path --callers 16,64,256`: the flow and the peer at each caller count."""
    from inventory.bench import saturation as sweep

    if not args.order_path:
        raise UsageError("--callers goes with --order-path")
    if args.database_url:
        usable_url(args.database_url, "--database-url")
    try:
        return sweep.sweep(args.callers, args.code, args.rounds, args.requests, args.database_url)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def auth() -> int:
    """`--auth`: each part with and without its authentication, side by side."""
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
