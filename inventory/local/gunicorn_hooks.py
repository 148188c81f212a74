"""gunicorn hooks (`--config python:inventory.local.gunicorn_hooks`) for prometheus_client's
multiprocess mode: the metrics folder starts empty with gunicorn (values of an earlier run
would be added in), and a worker that exits is marked dead, so its live gauges go.

And each worker, once its app is loaded, leaves its pid in WORKERS_READY_DIR: the stack is
ready when every worker is, not when the first answers /healthz. A worker loads its app in
about 3 s here; a load started when only the first had, put every kept-alive connection on it,
so the service ran as one process for the whole run (a no-lock baseline then met no concurrent
writer at all, and oversold nothing)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any


def on_starting(server: Any) -> None:
    for name in ("PROMETHEUS_MULTIPROC_DIR", "WORKERS_READY_DIR"):
        folder = os.environ.get(name)
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
            Path(folder).mkdir(parents=True)


def post_worker_init(worker: Any) -> None:
    folder = os.environ.get("WORKERS_READY_DIR")
    if folder:
        Path(folder, str(worker.pid)).touch()


def child_exit(server: Any, worker: Any) -> None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
