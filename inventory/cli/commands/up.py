"""`inventory up`: the local stack, started in the background (inventory/local/stack.py)."""

from __future__ import annotations

import argparse

from rich.console import Console

from inventory.cli.errors import UsageError
from inventory.cli.options import at_least
from inventory.cli.running_stack import print_status
from inventory.local import stack

NAME = "up"
SUMMARY = "start the local stack in the background (state in ./.inventory)"

console = Console()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workers", type=at_least(1), default=2, help="gunicorn workers per service"
    )
    parser.add_argument(
        "--threads", type=at_least(1), default=8, help="threads per stock-service worker"
    )
    parser.add_argument(
        "--reconcilers",
        type=at_least(0),
        default=2,
        help="instances of the elected reconciler (one leads, the others stand by)",
    )
    parser.add_argument(
        "--relays",
        type=at_least(0),
        default=2,
        help="instances of the relay of stock events (one leads, the others stand by)",
    )
    parser.add_argument(
        "--deliverers",
        type=at_least(0),
        default=2,
        help="instances of the deliverer of webhooks (one leads, the others stand by); "
        "WEBHOOK_ALLOW_PRIVATE=true in the environment lets a receiver on 127.0.0.1 subscribe",
    )
    parser.add_argument(
        "--monitoring",
        action="store_true",
        help="also start Debian's prometheus, scraping both services (its URL in the status)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        state = stack.up(
            workers=args.workers,
            threads=args.threads,
            reconcilers=args.reconcilers,
            relays=args.relays,
            deliverers=args.deliverers,
            monitoring=args.monitoring,
            say=console.print,
        )
    except stack.SettingsError as exc:
        raise UsageError(str(exc)) from exc
    print_status(state)
    return 0
