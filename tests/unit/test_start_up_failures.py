"""A server that dies while starting fails the start at once, with the line that says why,
instead of a wait for its whole timeout and a log dump."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from inventory.local.servers import ServerError, last_error, pid_alive, spawn, wait_until

GUNICORN_LOG = """\
[2026-11-22 10:00:00 +0000] [10] [INFO] Starting gunicorn 27.0.1
Traceback (most recent call last):
  File "stock_service/__init__.py", line 40, in create_app
ValueError: LOCK_BACKEND must be one of zookeeper, redis, database, none
[2026-11-22 10:00:01 +0000] [11] [ERROR] Exception in worker process
[2026-11-22 10:00:01 +0000] [10] [ERROR] Reason: Worker failed to boot.
"""


def test_the_last_error_line_is_the_exception_not_gunicorns_summary(tmp_path: Path) -> None:
    log = tmp_path / "stock_service.log"
    log.write_text(GUNICORN_LOG)
    assert (
        last_error(log)
        == "ValueError: LOCK_BACKEND must be one of zookeeper, redis, database, none"
    )
    log.write_text("starting\n[ERROR] port 8082 in use\nshutting down\n")
    assert last_error(log) == "[ERROR] port 8082 in use"


def test_a_process_that_dies_while_starting_fails_at_once(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    script = "import sys; print('RuntimeError: no config', flush=True); sys.exit(3)"
    pid = spawn([sys.executable, "-c", script], log, tmp_path)
    started = time.monotonic()
    with pytest.raises(ServerError, match="exited while starting: RuntimeError: no config"):
        wait_until(lambda: False, 60, "the server", log, alive=lambda: pid_alive(pid))
    assert time.monotonic() - started < 10  # not the 60 s timeout
