"""`inventory reconciler`: one instance of the elected reconciler, until SIGTERM or ^C
(order_service/reconciler_service.py campaigns and passes)."""

from __future__ import annotations

import argparse
import os

from inventory.local import stack_state
from shared.settings import Settings

NAME = "reconciler"
SUMMARY = "reconciliation as a service: one elected leader reconciles, the others stand by"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--name", default=None, help="this instance's name in the election (default host:pid)"
    )


def run(args: argparse.Namespace) -> int:
    import socket
    import threading

    from order_service.reconciler_service import serve
    from shared.logs import configure_logging

    state = stack_state.load_state()
    env = {**(state.env() if state else {}), **os.environ}
    settings = Settings.from_env(env)
    configure_logging(settings.log_level)
    name = args.name or f"{socket.gethostname()}:{os.getpid()}"
    serve(settings, name, threading.Event())  # until SIGTERM or ^C, which resign on the way out
    return 0
