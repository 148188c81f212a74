"""What the order service spends per request outside its flow, against a bare Flask route: the
apps of frame_apps.py under the order service's gunicorn shape, each answering POST /genOrder
with a fixed body, loaded in turn by the bench's light client (rounds interleaved). Prints each
one's rate and CPU per request (gunicorn's processes, and the client's), the frame's cost over
the bare route, and each part's (the frame against the frame without it).

    python -m inventory.bench.frame_cost [--requests N] [--concurrency N] [--rounds N]

Not part of `inventory bench`: a tool for cutting the order service's per-request cost; its
figures are in docs/bench.md."""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
from functools import partial
from pathlib import Path

import httpx

from inventory.bench.frame_apps import KINDS, PARTS
from inventory.load.cpu import cpu_seconds
from inventory.load.http_load import Call, run_calls
from inventory.local import servers
from inventory.local.gunicorn import gunicorn_argv, service_shape

BODY = json.dumps({"userId": "bench-frame", "goodsIds": ["sku-frame"]}).encode()


def start(kind: str, home: Path) -> tuple[str, int]:
    """The app under gunicorn, with the order service's shape and environment (its metrics
    in a multiprocess folder, as the stack runs it)."""
    port = servers.free_port()
    workers, threads = service_shape("order_service", 2, 8)
    argv = gunicorn_argv("inventory.bench.frame_apps", f"127.0.0.1:{port}", workers, threads)
    # gunicorn_argv names a module's create_app(); these take the kind.
    argv[argv.index("inventory.bench.frame_apps:create_app()")] = (
        f'inventory.bench.frame_apps:create_app("{kind}")'
    )
    folder = home / kind
    metrics = folder / "metrics"
    metrics.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(metrics)}
    env["WORKERS_READY_DIR"] = str(folder / "ready")
    pid = servers.spawn(argv, folder / "gunicorn.log", folder, env)
    url = f"http://127.0.0.1:{port}"
    servers.wait_until(
        partial(_healthy, url),
        60,
        kind,
        folder / "gunicorn.log",
        alive=partial(servers.pid_alive, pid),
    )
    return url, pid


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def measure(kind: str, home: Path, requests: int, concurrency: int) -> dict[str, float]:
    url, pid = start(kind, home)
    try:
        calls = [Call("POST", "/genOrder", BODY)] * requests
        run_calls(url, calls[: requests // 5], concurrency)  # warm: connections, caches
        server0 = cpu_seconds(pid)
        client0 = _own_cpu()
        run = run_calls(url, calls, concurrency)
        server = cpu_seconds(pid) - server0
        client = _own_cpu() - client0
        ok = sum(a.status == 200 for a in run.answers)
        if ok != requests:
            raise RuntimeError(f"{kind}: {requests - ok} of {requests} requests not answered 200")
        return {
            "per_second": requests / run.elapsed,
            "server_ms": server * 1000 / requests,
            "client_ms": client * 1000 / requests,
        }
    finally:
        servers.stop_pid(pid)


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    results: dict[str, list[dict[str, float]]] = {kind: [] for kind in KINDS}
    with tempfile.TemporaryDirectory(prefix="inventory-frame-") as home:
        for round_ in range(args.rounds):
            kinds = KINDS[round_ % len(KINDS) :] + KINDS[: round_ % len(KINDS)]
            for kind in kinds:
                results[kind].append(measure(kind, Path(home), args.requests, args.concurrency))
    med = {
        kind: {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        for kind, rows in results.items()
    }
    print(f"{args.concurrency} callers, {args.requests} requests, median of {args.rounds} rounds")
    print(f"{'app':<22}{'req/s':>8}{'server ms':>11}{'x bare':>8}{'client ms':>11}")
    bare = med["bare"]["server_ms"]
    for kind, m in med.items():
        print(
            f"{kind:<22}{m['per_second']:>8.0f}{m['server_ms']:>11.3f}"
            f"{m['server_ms'] / bare:>8.2f}{m['client_ms']:>11.3f}"
        )
    frame = med["frame"]["server_ms"]
    print(f"the frame over a bare route: {frame - bare:+.3f} ms per request")
    for part in PARTS:
        print(f"  {part:<14}{frame - med[f'frame-no-{part}']['server_ms']:+.3f} ms per request")
    return 0


if __name__ == "__main__":
    sys.exit(main())
