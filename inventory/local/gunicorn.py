"""The services under gunicorn: the command line (the local stack's and each replica of the
cluster's), and a service started for the local stack."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from inventory.local import servers
from shared.logs import gunicorn_json_log_config


def start_service(
    module: str, port: int, home: Path, env: dict[str, str], workers: int, threads: int
) -> int:
    shape = service_shape(module, workers, threads, env.get("LOCK_BACKEND"))
    argv = gunicorn_argv(module, f"127.0.0.1:{port}", *shape)
    # The workers' metrics meet in this folder (shared/metrics.py); gunicorn_hooks wipes it.
    env = {
        **env,
        "PROMETHEUS_MULTIPROC_DIR": str(home / f"metrics-{module}"),
        "WORKERS_READY_DIR": str(ready_folder(home, module)),
    }
    if env.get("LOG_FORMAT", "").strip().lower() == "json":
        config = home / "gunicorn-logging.json"
        config.write_text(json.dumps(gunicorn_json_log_config(env.get("LOG_LEVEL", "INFO"))))
        argv += ["--log-config-json", str(config)]
    return servers.spawn(argv, home / f"{module}.log", home, env)


def service_shape(
    module: str, workers: int, threads: int, lock_backend: str | None = None
) -> tuple[int, int]:
    """Processes and threads of one service, from the stack's `--workers`/`--threads` (the
    stock service's shape). The order service gets half the processes (at least one) with the
    threads of twice the stock service's shape spread over them: its orders form batches per
    process (coordination/combining.py), so on the same cores fewer processes make bigger
    batches. Measured here on PostgreSQL, 16 callers, one hot goods id: one process of 32
    threads placed batches of 10-13 orders where two of 16 placed 5-7, at two thirds of the
    stack's CPU per order (docs/bench.md). Without a lock (LOCK_BACKEND=none, the baseline
    that shows what the lock prevents) the order service keeps the stock service's processes:
    one process places its batches one at a time, and calls that never meet would hide the
    race that a deployment's several app servers run into."""
    if module != "order_service" or lock_backend == "none":
        return workers, threads
    processes = max(1, workers // 2)
    return processes, max(1, threads * 2 * workers // processes)


def ready_folder(home: Path, module: str) -> Path:
    """Where each worker of the service leaves its pid once its app is loaded (gunicorn_hooks)."""
    return home / f"ready-{module}"


def gunicorn_argv(module: str, bind: str, workers: int, threads: int) -> list[str]:
    """One service under gunicorn (the local stack's and each replica of the cluster's)."""
    return [
        sys.executable,
        "-m",
        "gunicorn",
        f"{module}:create_app()",
        "--bind",
        bind,
        "--workers",
        str(workers),
        "--worker-class",
        "gthread",
        "--threads",
        str(threads),
        "--timeout",
        "60",
        "--graceful-timeout",
        "5",
        # Longer than the clients' idle expiry (the load test's is 1 s), so a client never
        # sends on a connection the server is closing.
        "--keep-alive",
        "5",
        "--backlog",
        "2048",
        "--error-logfile",
        "-",
        # gunicorn 24+ opens a control socket at ~/.gunicorn/gunicorn.ctl by default: one path
        # for every gunicorn of the user, which the two services (and every stack a test
        # starts) would fight over. Nothing here uses it.
        "--no-control-socket",
        # prometheus_client's multiprocess mode: the metrics folder wiped at start, dead
        # workers marked (inventory/local/gunicorn_hooks.py).
        "--config",
        "python:inventory.local.gunicorn_hooks",
    ]
