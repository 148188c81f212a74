"""`inventory status`: the running stack's URLs and processes, and stacks left behind."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console

from inventory.cli.errors import UsageError
from inventory.cli.running_stack import no_stack, print_status
from inventory.local import homes, stack_state

NAME = "status"
SUMMARY = "URLs and addresses of the running stack; stacks left behind"

console = Console()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="as JSON")


def run(args: argparse.Namespace) -> int:
    state = stack_state.load_state()
    leftovers = homes.left_behind()
    if args.json:
        data: dict[str, Any] = state.as_json() if state else {"running": False}
        data["state_file"] = str(stack_state.home_dir() / stack_state.STATE_FILE)
        data["left_behind"] = [{"home": str(x.home), "pids": x.pids} for x in leftovers]
        print(json.dumps(data, indent=2))
    elif state is not None:
        print_status(state)
    if leftovers and not args.json:
        for leftover in leftovers:
            console.print(
                f"[yellow]left behind by a run that was killed: {leftover.home} "
                f"({len(leftover.pids)} processes still running)"
            )
        console.print("[yellow]`inventory down` stops them and removes their folders")
    if state is None or not stack_state.is_running(state):
        raise UsageError(no_stack(state))  # one line on stderr, exit 2 (stdout stays JSON)
    return 0
