"""How many request threads the process serving the stock service has, when it can be known:
gunicorn's `--threads` (its command line, which a worker keeps from the master it was forked
from, or GUNICORN_CMD_ARGS), as the local stack and the cluster start it. A waiting request
holds one of them, and gunicorn's gthread worker goes on accepting connections when all are
taken, queueing their requests for the next free one: the lock queues bound how many of them
the waiters of one stalled lock may take (lock_queue.py). None when unknown
(a test's server, another WSGI server): no such bound."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping, Sequence


def gunicorn_threads(
    argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None
) -> int | None:
    """`--threads N` of a gunicorn command line (or GUNICORN_CMD_ARGS); None if not gunicorn's
    or not given."""
    argv = list(sys.argv if argv is None else argv)
    env = os.environ if env is None else env
    if not any("gunicorn" in part for part in argv[:3]):
        return None
    found = _threads_of(argv)
    if found is None:
        found = _threads_of(shlex.split(env.get("GUNICORN_CMD_ARGS", "")))
    return found


def _threads_of(args: Sequence[str]) -> int | None:
    found = None
    for i, arg in enumerate(args):
        value = None
        if arg == "--threads" and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith("--threads="):
            value = arg.split("=", 1)[1]
        if value is not None and value.isdigit() and int(value) > 0:
            found = int(value)
    return found


def lock_wait_threads(threads: int | None) -> int | None:
    """The threads the waiters of one stalled lock may take: half the process's (at least
    one), so that the other half serves every other goods id; None when unknown."""
    return None if threads is None else max(1, threads // 2)
