"""`inventory reconciler`: one instance of the elected reconciler, until SIGTERM or ^C, with
the running stack's settings: `python -m order_service.settling.reconciler` (the product's own entry
point, configured by its environment alone) given the stack's environment."""

from __future__ import annotations

import argparse
import os

from inventory.local import stack_state
from shared.config.settings import Settings

NAME = "reconciler"
SUMMARY = "reconciliation as a service: one elected leader reconciles, the others stand by"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--name", default=None, help="this instance's name in the election (default host:pid)"
    )


def run(args: argparse.Namespace) -> int:
    from order_service.settling.reconciler import serve
    from shared.programs import run_singleton

    state = stack_state.load_state()
    settings = Settings.from_env({**(state.env() if state else {}), **os.environ}, NAME)
    names = ["--name", args.name] if args.name else []
    return run_singleton("reconciler", serve, names, settings)
