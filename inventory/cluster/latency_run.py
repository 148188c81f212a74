"""`inventory cluster bench-latency`: on the running cluster if it was brought up with its
links delayed, or on one brought up here (and taken down again, also after a failure)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from inventory.cli.errors import UsageError
from inventory.cluster import deploy, latency_bench, latency_report


def run_latency_bench(args: argparse.Namespace, console: Console) -> int:
    state = deploy.load_state()
    own = state is None
    if state is not None and state.link_delay_ms is None:
        raise UsageError(
            "the running cluster has no delaying proxies in its PostgreSQL links: "
            "`inventory cluster down`, then this again (it brings one up), or "
            "`inventory cluster up --link-delay-ms 0.5` first"
        )
    try:
        if state is None:
            console.print(f"bringing a cluster up, its links delayed by {args.delays[0]} ms")
            state = deploy.up(
                args.workers, args.threads, {}, console.print, link_delay_ms=args.delays[0]
            )
        report = latency_bench.bench(
            state, args.delays, args.callers, args.rounds, args.orders, console.print
        )
    finally:
        if own:
            deploy.down(say=console.print)
    latency_report.show(report, Console(width=170))  # its tables are wide
    if args.report:
        for path in latency_report.write(report, Path(args.report)):
            console.print(f"wrote {path}")
    return 0
