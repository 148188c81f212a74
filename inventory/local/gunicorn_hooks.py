"""gunicorn hooks (`--config python:inventory.local.gunicorn_hooks`) for prometheus_client's
multiprocess mode: the metrics folder starts empty with gunicorn (values of an earlier run
would be added in), and a worker that exits is marked dead, so its live gauges go."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any


def on_starting(server: Any) -> None:
    folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
        Path(folder).mkdir(parents=True)


def child_exit(server: Any, worker: Any) -> None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
