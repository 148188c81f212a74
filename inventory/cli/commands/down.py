"""`inventory down`: stop what `up` started, and what a killed run left behind."""

from __future__ import annotations

import argparse

from rich.console import Console

from inventory.local import homes, stack

NAME = "down"
SUMMARY = "stop what `up` started, and any stack a killed run left behind"

console = Console()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    pass  # no options


def run(args: argparse.Namespace) -> int:
    stack.down(say=console.print)
    for leftover in homes.left_behind():
        homes.clean_up(leftover)
        console.print(
            f"stopped {len(leftover.pids)} processes left behind in {leftover.home}, and removed it"
        )
    return 0
