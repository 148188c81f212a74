"""`inventory chaos`: load on the cluster while the nemesis injects faults, then the checks
(inventory/chaos/ runs and judges); `--list-faults` names the faults without a cluster."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rich.console import Console

from inventory.cli.errors import UsageError
from inventory.cli.options import at_least

NAME = "chaos"
SUMMARY = "load on the cluster while a nemesis injects faults; then check"

console = Console()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    p = parser
    p.add_argument(
        "--faults",
        metavar="A,B,C",
        help="faults to inject, in order (default: all; --quick: a few); "
        "`inventory chaos --list-faults` names them",
    )
    p.add_argument(
        "--list-faults",
        action="store_true",
        help="print each fault's name and what it does, and which --quick injects; then exit",
    )
    p.add_argument("--quick", action="store_true", help="a few faults, a few minutes (for CI)")
    p.add_argument(
        "--orders",
        type=at_least(1),
        help="keep the load on until this many orders (default 10000; --quick 500)",
    )
    p.add_argument(
        "--lock",
        choices=["zookeeper", "redis", "none"],
        help="run the replicas with this LOCK_BACKEND for the run",
    )
    p.add_argument(
        "--no-fencing", action="store_true", help="run the replicas with FENCING=false for the run"
    )
    p.add_argument(
        "--no-skew",
        action="store_true",
        help="every host on the true clock (by default each order and stock host runs its own, "
        "within 2 s of it; INVENTORY_CHAOS_SKEW=off does the same)",
    )
    p.add_argument("--seed", type=int, default=1, help="random seed of buyers and nemesis")
    p.add_argument("--report", metavar="DIR", default="chaos-report", help="where the report goes")


def run(args: argparse.Namespace) -> int:
    if args.list_faults:
        return list_faults()
    from inventory.chaos import checker, nemesis, report
    from inventory.chaos.run import ChaosConfig, ChaosError, run_chaos

    if args.faults:
        faults = [f.strip() for f in args.faults.split(",") if f.strip()]
    else:
        faults = list(nemesis.QUICK if args.quick else nemesis.FAULTS)
    settings = {}
    if args.lock:
        settings["LOCK_BACKEND"] = args.lock
    if args.no_fencing:
        settings["FENCING"] = "false"
    config = ChaosConfig(
        faults=faults,
        min_orders=args.orders if args.orders is not None else (500 if args.quick else 10_000),
        baseline=5.0 if args.quick else 10.0,
        recover=5.0 if args.quick else 8.0,
        settings=settings,
        seed=args.seed,
        folder=Path(args.report),
        skew=not args.no_skew,
    )
    try:
        result = run_chaos(config, say=console.print)
    except ChaosError as exc:
        raise UsageError(str(exc)) from exc
    console.print(report.markdown(result["table"], result["verdicts"]), markup=False)
    for what, why in result["not_available"].items():
        console.print(f"[yellow]not available: {what}: {why}")
    verdict = result["verdict"]
    colour = {"valid": "green", "violated": "bold red", "unknown": "yellow"}[verdict]
    console.print(
        f"[{colour}]{verdict}[/]: {result['orders']} orders, {len(faults)} faults; "
        f"report in {args.report}"
    )
    return checker.EXIT_CODES[verdict]


def list_faults() -> int:
    """The nemesis's faults, one a line (for grep and a pager: not wrapped), in the order a
    full run injects them (nemesis.FAULTS), each held that long before its heal; `*` marks
    those of --quick (nemesis.QUICK)."""
    from inventory.chaos import nemesis

    width = max(len(name) for name in nemesis.FAULTS)
    lines = [f"  {'fault':{width}}  held  what it does"]
    for name, fault in nemesis.FAULTS.items():
        quick = "*" if name in nemesis.QUICK else " "
        lines.append(f"{quick} {name:{width}}  {fault.hold:>2g} s  {fault.what}")
    lines.append(f"* --quick injects these, in this order: {','.join(nemesis.QUICK)}")
    try:
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # `| head` had read enough; nothing more is written at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
