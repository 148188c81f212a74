"""`inventory reconcile`: one settlement pass by hand (order_service/settling/reconcile.py
does it)."""

from __future__ import annotations

import argparse
import os

from rich.console import Console

from inventory.cli.errors import UsageError
from inventory.cli.options import positive_float
from inventory.local import stack_state
from inventory.local.databases import usable_url
from shared.config.settings import Settings

NAME = "reconcile"
SUMMARY = "one pass by hand: settle every PENDING order from the stock database"

console = Console()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--older-than",
        type=positive_float,
        default=None,
        help="only orders older than this many seconds (default: RECONCILE_OLDER_THAN, else one "
        "request's whole budget from the settings; less is refused: a request may still run)",
    )


def run(args: argparse.Namespace) -> int:
    from datetime import timedelta

    from order_service.settling.reconciler import pass_once

    state = stack_state.load_state()
    if state is None and not (
        os.environ.get("ORDER_DATABASE_URL") and os.environ.get("STOCK_SERVICE_URL")
    ):
        raise UsageError(
            "no stack to reconcile: start one with `inventory up`, or set ORDER_DATABASE_URL "
            "and STOCK_SERVICE_URL"
        )
    env = {**(state.env() if state else {}), **os.environ}
    try:
        age = {} if args.older_than is None else {"reconcile_older_than": args.older_than}
        settings = Settings.from_env(env, **age)
    except ValueError as exc:
        raise UsageError(str(exc).replace("RECONCILE_OLDER_THAN", "--older-than")) from exc
    usable_url(settings.order_database_url, "ORDER_DATABASE_URL")
    report = pass_once(settings, timedelta(seconds=settings.reconcile_age()))
    console.print(
        f"examined {report.examined} PENDING orders in {report.pages} page(s): "
        f"{len(report.confirmed)} confirmed (the stock database has their deduction), "
        f"{len(report.failed)} failed (their flags voided or refused: nothing deducted, "
        "nothing will be), "
        f"{len(report.retried)} deducted again and still undecided (the next pass looks "
        "again), "
        f"{len(report.mismatched)} with flows that differ from their lines, "
        f"{report.unreachable} not checked (stock service unreachable)"
    )
    return 1 if report.mismatched or report.unreachable else 0
