"""`inventory migrate`: both databases to head, before any service starts on them."""

from __future__ import annotations

import argparse
import os

from rich.console import Console

from inventory.cli.errors import UsageError
from inventory.local import stack_state
from inventory.local.databases import VARIABLES, usable_url

NAME = "migrate"
SUMMARY = "migrate ORDER_DATABASE_URL and STOCK_DATABASE_URL (else the running stack's) to head"

console = Console()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    pass  # the databases come from the environment or the running stack


def run(args: argparse.Namespace) -> int:
    import migrations

    urls = database_urls(stack_state.load_state())
    for history, url in urls.items():  # all checked before any is migrated
        usable_url(url, VARIABLES[history] if os.environ.get(VARIABLES[history]) else history)
    for history, url in urls.items():
        migrations.upgrade(url, history)
        console.print(f"{history} database at head: {url}")
    return 0


def database_urls(state: stack_state.StackState | None) -> dict[str, str]:
    """ORDER_/STOCK_DATABASE_URL, else the running stack's; a user mistake if neither."""
    urls = {}
    for history, variable in (("order", "ORDER_DATABASE_URL"), ("stock", "STOCK_DATABASE_URL")):
        url = os.environ.get(variable) or (
            getattr(state, f"{history}_database_url") if state else None
        )
        if not url:
            raise UsageError(
                f"which {history} database? set {variable}, or start a stack with `inventory up`"
            )
        urls[history] = url
    return urls
