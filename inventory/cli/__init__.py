"""The `inventory` command line: one module per command in commands/ (each adds its arguments
and runs), parser.py puts them under one program, options.py holds the argument types. A user
mistake is one line and exit 2; SIGTERM stops what the command started, as Ctrl-C does."""

from __future__ import annotations

import signal
import sys
from collections.abc import Sequence
from types import FrameType

from rich.console import Console

from inventory.cli.errors import UsageError
from inventory.cli.parser import build_parser
from inventory.local.databases import DatabaseProblem

__all__ = ["UsageError", "build_parser", "main"]

err = Console(stderr=True)


class Terminated(BaseException):
    """SIGTERM, raised where the main thread is, so every `finally` on the way out runs (the
    stacks and servers the command started are stopped). A BaseException, like
    KeyboardInterrupt, so no `except Exception` swallows it."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import logging

    # The command's own clients see servers stop on purpose; their reconnect warnings are noise.
    logging.getLogger("kazoo.client").setLevel(logging.ERROR)
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        err.print("interrupted; what this command started is stopped")
        return 130
    except Terminated:
        err.print("terminated; what this command started is stopped")
        return 143
    except (UsageError, DatabaseProblem) as exc:  # what the user can fix: one line, exit 2
        err.print(f"[red]inventory {args.command}: {exc}", highlight=False, soft_wrap=True)
        return 2
    except Exception as exc:  # a clear line for the user, not a traceback
        message = known_failure(exc)
        if message is None:
            raise
        err.print(f"[red]inventory {args.command}: {message}", highlight=False, soft_wrap=True)
        return 1


def known_failure(exc: Exception) -> str | None:
    """One line for the failures of the world outside (a server that did not start, a
    database or service that does not answer); None for a bug, which keeps its traceback."""
    import httpx
    import sqlalchemy.exc

    from inventory.local.servers import ServerError

    if isinstance(exc, ServerError):
        return str(exc)
    if isinstance(exc, sqlalchemy.exc.OperationalError):
        return f"database unreachable: {str(exc.orig).strip().splitlines()[0]}"
    if isinstance(exc, httpx.TransportError):
        return f"service unreachable: {exc}"
    return None


if __name__ == "__main__":
    sys.exit(main())
