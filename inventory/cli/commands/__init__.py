"""One module per command of `inventory`, named as the command, in the order `inventory --help`
lists them. Each names itself (NAME, SUMMARY), adds its arguments and runs: it parses and
delegates, and the work stays where it is done (inventory/local, loadtest, bench, scenarios,
cluster, chaos). inventory/cli/parser.py puts them under one program."""

from __future__ import annotations

import argparse
from typing import Protocol

from inventory.cli.commands import (
    bench,
    chaos,
    check,
    cluster,
    demo,
    down,
    events,
    loadtest,
    migrate,
    reconcile,
    reconciler,
    relay,
    seed,
    status,
    up,
)


class Command(Protocol):
    """What a command module defines."""

    NAME: str  # the word after `inventory`
    SUMMARY: str  # its line in `inventory --help`, and the head of its own --help

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...  # the exit code


COMMANDS: tuple[Command, ...] = (
    up,
    down,
    status,
    seed,
    migrate,
    demo,
    check,
    loadtest,
    reconcile,
    reconciler,
    relay,
    events,
    bench,
    cluster,
    chaos,
)
