"""`inventory loadtest`: many buyers over HTTP, then the invariant check (inventory/loadtest/),
on the running stack or on a stack of its own for the run."""

from __future__ import annotations

import argparse
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from inventory.cli.errors import UsageError
from inventory.cli.options import at_least, between, ratio
from inventory.local import homes, stack, stack_state
from shared.config.settings import LOCK_BACKENDS, LOCK_SCOPES

if TYPE_CHECKING:
    from inventory.loadtest import LoadConfig

NAME = "loadtest"
SUMMARY = "many buyers over HTTP, then the invariant check"

console = Console()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    p = parser
    p.add_argument("--orders", type=at_least(1), default=200, help="orders to place")
    p.add_argument("--concurrency", type=at_least(1), default=32, help="concurrent buyers")
    p.add_argument("--goods", type=at_least(1), default=1, help="goods ids")
    p.add_argument("--stock", type=at_least(0), default=40, help="initial stock per goods id")
    p.add_argument(
        "--lines", "--items", dest="items", type=at_least(1), default=1, help="lines per order"
    )
    p.add_argument(
        "--id-length",
        type=between(1, 64, "the longest goods id"),
        metavar="L",
        help="goods ids of L characters (24, 64: long ids, big bodies)",
    )
    p.add_argument(
        "--duplicates",
        dest="duplicate_ratio",
        type=ratio,
        default=0.0,
        help="share of orders submitted twice with one Idempotency-Key (0-1)",
    )
    p.add_argument("--seed", type=int, default=1, help="random seed of the buyers' choices")
    p.add_argument(
        "--cancel-rate",
        type=ratio,
        default=0.0,
        help="share of orders cancelled (0-1): half at once, racing their genOrder (by "
        "Idempotency-Key), half once placed",
    )
    p.add_argument(
        "--pay-within",
        type=at_least(1),
        default=None,
        metavar="S",
        help="every order a hold to pay within S seconds; two thirds of those not cancelled "
        "are paid, the rest left to expire (the stack's reconcilers cancel them)",
    )
    p.add_argument(
        "--restocks",
        type=at_least(0),
        default=0,
        metavar="N",
        help="N restocks (admin adjustments) to the goods ids in turn, the i-th once i/(N+1) of "
        "the orders are done, each of --restock-size units (default: a quarter of --stock)",
    )
    p.add_argument("--restock-size", type=at_least(1), default=0, metavar="U", help="units each")
    p.add_argument(
        "--lock",
        choices=LOCK_BACKENDS,
        help="start a stack of its own for the run with this LOCK_BACKEND (without --lock or "
        "--scope: the running stack, else a new one with zookeeper/sku; database: needs "
        "STOCK_DATABASE_URL on PostgreSQL or MySQL)",
    )
    p.add_argument(
        "--scope",
        choices=LOCK_SCOPES,
        help="start a stack of its own for the run with this LOCK_SCOPE",
    )
    p.add_argument(
        "--line-up",
        action="store_true",
        help="make every two deductions meet after their reads (a fault point, on a stack of "
        "the run's own: needs --lock): without a lock each pair loses one update, every run",
    )
    p.add_argument("--report", metavar="DIR", help="write loadtest.json and loadtest.png here")
    p.add_argument(
        "--keep", action="store_true", help="keep the folder of a stack started for the run"
    )


def run(args: argparse.Namespace) -> int:
    from inventory.loadtest import LoadConfig
    from inventory.loadtest.goods_ids import shortest

    wanted = {f.name for f in fields(LoadConfig)}
    config = LoadConfig(**{k: v for k, v in vars(args).items() if k in wanted})
    if config.items > config.goods:
        raise UsageError(f"--lines/--items {config.items} is more than --goods {config.goods}")
    if config.id_length is not None and config.id_length < shortest(config.seed, config.goods):
        raise UsageError(f"--id-length {config.id_length}: too short for --goods {config.goods}")
    if args.line_up and args.lock is None:
        raise UsageError("--line-up needs --lock: it arms a fault on a stack of the run's own")
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
    from inventory.loadtest.own_stack import own_stack_env, starting

    env = own_stack_env(config, args.lock, args.scope, args.line_up)
    with homes.temporary_home("loadtest", keep=args.keep, say=console.print) as home:
        try:
            state = starting(home, env, config, console.print)
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
