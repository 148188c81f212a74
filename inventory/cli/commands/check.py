"""`inventory check`: the invariants I1-I9 on two databases (inventory/check/), and I10, the
stock events, when the stack runs relays (inventory/check/events_source.py)."""

from __future__ import annotations

import argparse
import json
import os

from rich.console import Console

from inventory.cli.errors import UsageError
from inventory.cli.options import at_least, goods_level
from inventory.local import stack_state
from inventory.local.databases import VARIABLES, existing_database, migrate_command

NAME = "check"
SUMMARY = "check the invariants I1-I10 on the databases and the stream of stock events"

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
    parser.add_argument(
        "--no-events",
        action="store_true",
        help="skip I10, the stock events (checked when the running stack has relays and the "
        "stock database is its own)",
    )
    parser.add_argument(
        "--events-wait",
        type=at_least(0),
        default=30,
        metavar="S",
        help="seconds the relay gets to send the outbox before I10 reads the stream",
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
    if not args.no_events and checks_events(state, stock_url):
        assert state is not None
        from inventory.check.events_source import check_stack_events

        results.append(check_stack_events(state, args.goods_prefix, args.events_wait))
    if args.json:
        print(json.dumps(results_json(results), indent=2))
    else:
        print_results(results, console)
    return 0 if all(r.ok for r in results) else 1


def checks_events(state: stack_state.StackState | None, stock_url: str) -> bool:
    """I10 needs the stream the relays of this stock database write: the stack's, when it
    runs relays (`inventory up` starts two) and the check reads its stock database."""
    from inventory.check.events_source import relays_of

    return state is not None and relays_of(state) > 0 and stock_url == state.stock_database_url


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
