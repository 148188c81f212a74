"""`inventory demo`: the story of one order, the herd effect counted, or a fault scenario
(inventory/scenarios/ tells each). Those that start servers do so in a temporary home
(inventory/local/homes.py) and remove it however they end, unless --keep."""

from __future__ import annotations

import argparse

from rich.console import Console

from inventory import scenarios
from inventory.cli.errors import UsageError
from inventory.cli.options import between, positive_float
from inventory.local import homes, stack, stack_state

NAME = "demo"
SUMMARY = "the POST /genOrder demo (starts the stack if needed), or a scenario"

# `demo herd --waiters`: each waiter is a ZooKeeper session and four threads
# (inventory/scenarios/herd.py), and the single node's herd costs grow with the square of the
# waiters: 400 took about three minutes here (both designs), 100,000 ran for ten minutes and
# 2.6 GB without getting far.
# (Named here rather than in herd.py, so that parsing does not load kazoo.)
MAX_WAITERS = 500

console = Console()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "scenario",
        nargs="?",
        default="order",
        choices=["order", "herd", *scenarios.NAMES],
        help="order: one order end to end (default); herd: the article's herd effect; "
        "locations: stock in several places, allocated, partly filled, transferred; "
        "backorders: orders in line for stock not yet here, and cart reservations; "
        "flash-sale: 500 buyers, some clicking five times, for 100 units, one per buyer; "
        "the others cause a fault for real (docs/scenarios.md tells each)",
    )
    parser.add_argument(
        "--unfenced",
        action="store_true",
        help=f"{', '.join(scenarios.UNFENCED)}: with fencing off, to show the oversell it prevents",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="order: leave the stack it started running; scenarios and herd: keep their "
        "folder (logs, databases) and print where it is",
    )
    parser.add_argument(
        "--waiters",
        # Each waiter is a ZooKeeper session and four threads, and the single node's herd
        # grows with the square: an unbounded count ran for minutes and gigabytes.
        type=between(1, MAX_WAITERS, "each waiter is a ZooKeeper session and 4 threads"),
        nargs="+",
        default=[5, 10, 20],
        help=f"herd: numbers of waiters to compare, each at most {MAX_WAITERS}",
    )
    parser.add_argument(
        "--hold-ms", type=positive_float, default=10, help="herd: how long each holder holds"
    )


def run(args: argparse.Namespace) -> int:
    homes.keep_homes = args.keep
    if args.scenario == "herd":
        return herd(args)
    if args.scenario != "order":
        return scenario(args)
    if args.unfenced:
        raise UsageError("--unfenced goes with a fault scenario (stale-holder, redlock, ...)")
    from inventory.scenarios.demo import run_demo

    state = stack_state.load_state()
    started_here = state is None or not stack_state.is_running(state)
    if started_here:
        console.print("starting the local stack (inventory up) ...")
        state = stack.up(say=console.print, relays=1)  # the story shows the stock events
    assert state is not None
    try:
        return run_demo(state, console)
    finally:
        if started_here and not args.keep:
            stack.down(say=console.print)


def scenario(args: argparse.Namespace) -> int:
    from rich.panel import Panel

    if args.unfenced and args.scenario not in scenarios.UNFENCED:
        raise UsageError(f"--unfenced goes with the scenarios {', '.join(scenarios.UNFENCED)}")
    run_it = scenarios.named(args.scenario).load()
    console.rule(f"[bold]inventory demo {args.scenario}")
    result = run_it(console, unfenced=True) if args.unfenced else run_it(console)
    colour = "green" if result.ok else "red"
    console.print(Panel(f"[{colour}]{result.name}: {result.verdict}"))
    return 0 if result.ok else 1


def herd(args: argparse.Namespace) -> int:
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
