"""`inventory check`: the invariants I1-I5 on two databases (inventory/check/)."""

from __future__ import annotations

import argparse
import json
import os

from rich.console import Console

from inventory.cli.errors import UsageError
from inventory.cli.options import goods_level
from inventory.local import stack_state
from inventory.local.databases import VARIABLES, existing_database, migrate_command

NAME = "check"
SUMMARY = "check the invariants I1-I5 on the databases"

console = Console()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--order-db",
        help="order database URL (default: ORDER_DATABASE_URL, else the running stack's)",
    )
    parser.add_argument(
        "--stock-db",
        help="stock database URL (default: STOCK_DATABASE_URL, else the running stack's)",
    )
    parser.add_argument("--goods-prefix", default="", help="only goods ids starting with this")
    parser.add_argument(
        "--initial",
        nargs="*",
        metavar="GOODS=NUM",
        help="initial levels (default: the last seeded level of each goods id)",
    )
    parser.add_argument("--json", action="store_true", help="as JSON")


def run(args: argparse.Namespace) -> int:
    from inventory.check import print_results, results_json, run_check

    state = stack_state.load_state()
    order_url, order_source = check_url(args.order_db, "order", state)
    stock_url, stock_source = check_url(args.stock_db, "stock", state)
    if not order_url or not stock_url:
        raise UsageError(
            "no databases: give --order-db and --stock-db, set ORDER_DATABASE_URL and "
            "STOCK_DATABASE_URL, or run `inventory up`"
        )
    initial = dict(goods_level(pair) for pair in args.initial or [])
    fix = migrate_command({"order": order_url, "stock": stock_url})
    existing_database(order_url, order_source, fix)  # before an engine creates an empty file
    existing_database(stock_url, stock_source, fix)
    results = run_check(
        order_url,
        stock_url,
        goods_prefix=args.goods_prefix,
        initial=initial,
        sources=(order_source, stock_source),
    )
    if args.json:
        print(json.dumps(results_json(results), indent=2))
    else:
        print_results(results, console)
    return 0 if all(r.ok for r in results) else 1


def check_url(
    given: str | None, history: str, state: stack_state.StackState | None
) -> tuple[str | None, str]:
    """The URL `check` reads `history` from, and where it came from (for its errors)."""
    variable = VARIABLES[history]
    if given:
        return given, f"--{history}-db"
    if os.environ.get(variable):
        return os.environ[variable], variable
    url = getattr(state, f"{history}_database_url") if state else None
    return url, str(stack_state.home_dir() / stack_state.STATE_FILE)
