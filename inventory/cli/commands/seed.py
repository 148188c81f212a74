"""`inventory seed g1=100 g2=5`: stock levels set on the running stack (PUT /stock)."""

from __future__ import annotations

import argparse

import httpx
from rich.console import Console

from inventory.cli.errors import UsageError
from inventory.cli.options import goods_level
from inventory.cli.running_stack import require_stack

NAME = "seed"
SUMMARY = "set stock levels on the running stack: inventory seed g1=100 g2=5"

console = Console()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("levels", nargs="+", metavar="GOODS=NUM", help="a goods id and its level")


def run(args: argparse.Namespace) -> int:
    from inventory.local.client import StackClient

    levels = [goods_level(pair) for pair in args.levels]  # all checked before any is set
    client = StackClient(require_stack())
    try:
        for goods_id, num in levels:
            try:
                row = client.seed(goods_id, num)
            except httpx.HTTPStatusError as exc:
                raise UsageError(f"{goods_id}: {server_message(exc.response)}") from exc
            console.print(f"{goods_id} = {row['num']} (seed version {row['seedVersion']})")
    finally:
        client.close()
    return 0


def server_message(response: httpx.Response) -> str:
    """The service's own `{"error": ...}`, which says what was wrong."""
    try:
        return str(response.json()["error"])
    except (ValueError, KeyError, TypeError):
        return f"HTTP {response.status_code}"
