"""Running one instance of a singleton job (the elected reconciler, the relay of stock events)
as a program of its own: configured by its environment alone (the settings that program
reads), stopped by SIGTERM or ^C, after which it resigns and closes what it holds."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import threading
from collections.abc import Callable
from types import FrameType

from shared.config.settings import Settings
from shared.logs import configure_logging

Serve = Callable[[Settings, str, threading.Event], None]


def run_singleton(
    what: str, serve: Serve, argv: list[str] | None = None, settings: Settings | None = None
) -> int:
    parser = argparse.ArgumentParser(prog=f"{what}", description=f"one instance of the {what}")
    parser.add_argument(
        "--name", default=None, help="this instance's name in the election (default host:pid)"
    )
    args = parser.parse_args(argv)
    settings = settings or Settings.from_env(program=what)
    configure_logging(settings.log_level, settings.log_format)
    stop = threading.Event()

    def stopped(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, stopped)
    signal.signal(signal.SIGINT, stopped)
    serve(settings, args.name or f"{socket.gethostname()}:{os.getpid()}", stop)
    return 0
