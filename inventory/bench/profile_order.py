"""Where the CPU of one POST /genOrder goes, by process and by what the code is: py-spy on each
gunicorn worker of the order and the stock service during a genOrder load on one hot goods id
(the ZooKeeper stack with combining, as `inventory bench` runs it), and with `--peer` on the
one-database peer's workers under the same load.

    python -m inventory.bench.profile_order [--database-url URL] [--orders N] [--peer]

Needs py-spy (`pip install py-spy`) and the right to read other processes (root, or
ptrace_scope 0). Each worker's samples (active threads only: py-spy leaves out threads waiting
in a system call) are turned into milliseconds of CPU per order with that worker's CPU read
from /proc over the same load: a function's share of the samples times the process's CPU per
order. Writes each worker's raw stacks (py-spy's collapsed format) and a summary.json to
--out; prints the top functions by self and total time and by category (profile_stacks.py).
Not part of `inventory bench`: a tool for redesigning the order path."""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import migrations
from inventory.bench.config import StackConfig
from inventory.bench.loads import order_load, seed_goods
from inventory.bench.peer import prepare, start_peer
from inventory.bench.pg_cpu import DatabaseCpu
from inventory.bench.profile_stacks import KERNEL, Weights, read_stacks, render, top, weigh
from inventory.bench.runner import throwaway_database
from inventory.load.cpu import TICKS, children, cpu_seconds
from inventory.local import stack
from inventory.local.stack_state import StackState


def user_system(pid: int) -> tuple[float, float]:
    """User and system CPU seconds of one process (its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) / TICKS, int(fields[12]) / TICKS


def py_spy() -> str | None:
    """py-spy on the PATH, or beside this Python (a virtual environment not activated)."""
    beside = Path(sys.executable).parent / "py-spy"
    return shutil.which("py-spy") or (str(beside) if beside.exists() else None)


def profile(
    workers: dict[str, int],
    run: Any,
    out: Path,
    args: argparse.Namespace,
    extra: dict[str, int],
) -> dict[str, Any]:
    """py-spy on each worker while `run()` places the orders; CPU of the workers and of
    `extra` processes (with their children) from /proc over the same span.

    --gil (the default): py-spy samples the thread holding the GIL, so the samples share out
    the worker's user CPU (Python and the C it calls without releasing the GIL), and its
    system CPU (the kernel's side of sockets, futexes, polls, done with the GIL released) is a
    line of its own. Without it (--active), py-spy samples every thread it deems active, and
    all of the worker's CPU is shared out; on an oversubscribed machine that counts threads
    that are runnable but waiting for a core, woken from a socket wait, so it overweighs
    the I/O frames."""
    gil = not args.active
    spies = {
        name: subprocess.Popen(
            [
                py_spy() or "py-spy",
                "record",
                "--pid",
                str(pid),
                "--rate",
                str(args.rate),
                *(["--gil"] if gil else []),
                "--nonblocking",
                "--format",
                "raw",
                "--output",
                str(out / f"{name}.raw"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for name, pid in workers.items()
    }
    before = {n: user_system(p) for n, p in workers.items()}
    before_extra = {n: cpu_seconds(p) for n, p in extra.items()}
    result = run()
    after = {n: user_system(p) for n, p in workers.items()}
    after_extra = {n: cpu_seconds(p) for n, p in extra.items()}
    for spy in spies.values():
        spy.send_signal(signal.SIGINT)
    for spy in spies.values():
        spy.wait(timeout=60)
    orders = max(result.ok, 1)
    summary: dict[str, Any] = {"orders": result.ok, "errors": len(result.run.answers) - result.ok}
    summary["sampled"] = "GIL holder" if gil else "active threads"
    summary["per_second"] = round(result.run.per_second, 1)
    services: dict[str, Weights] = {}
    service_ms: defaultdict[str, float] = defaultdict(float)
    summary["samples"] = {}
    for name in workers:
        stacks = read_stacks(out / f"{name}.raw")
        summary["samples"][name] = sum(stacks.values())
        user, system = ((after[name][i] - before[name][i]) * 1000 / orders for i in (0, 1))
        summary.setdefault("cpu", {})[name] = {"user": round(user, 3), "system": round(system, 3)}
        service = name.split(".")[0]  # its workers together: ms per order of the service
        service_ms[service] += user + system
        merged = services.setdefault(service, {})
        weights = weigh(stacks, user if gil else user + system)
        if gil:
            weights["categories"][KERNEL] += system
        for kind, values in weights.items():
            into = merged.setdefault(kind, defaultdict(float))
            for key, value in values.items():
                into[key] += value
    summary["services"] = {s: top(w, service_ms[s]) for s, w in services.items()}
    summary["other_processes_ms_per_order"] = {
        n: round((after_extra[n] - before_extra[n]) * 1000 / orders, 3) for n in extra
    }
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", help="a PostgreSQL server (default: SQLite files)")
    parser.add_argument("--orders", type=int, default=4000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rate", type=int, default=100, help="py-spy samples per second")
    parser.add_argument("--peer", action="store_true", help="also the one-database peer")
    parser.add_argument(
        "--active",
        action="store_true",
        help="sample every active thread instead of the GIL holder (see profile())",
    )
    parser.add_argument("--out", default="profile-order", help="folder of the results")
    args = parser.parse_args(argv)
    if py_spy() is None:
        print("py-spy not found: pip install py-spy", file=sys.stderr)
        return 2
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    with stack_env(args.database_url) as (env, database):
        summary: dict[str, Any] = {"database": database}
        summary["genOrder"] = _profile_stack(out, env, args)
        if args.peer:
            summary["peer"] = _profile_peer(out, env, args)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(render(summary))
    print(f"raw stacks and summary.json in {out}")
    return 0


def warmed(state: StackState, concurrency: int) -> tuple[list[str], dict[str, int], dict[str, int]]:
    """A hot goods id seeded and its path warmed (pools, lock paths); each service worker's pid
    by name, and ZooKeeper's and Redis's."""
    hot = seed_goods(state, 1, "profile-hot-")
    order_load(state.order_url, hot, 400, concurrency)
    workers = {
        f"{service}.{i}": pid
        for service in ("order_service", "stock_service")
        for i, pid in enumerate(sorted(children(state.pids[service])))
    }
    extra: dict[str, int] = {n: state.pids[n] for n in ("zookeeper", "redis") if n in state.pids}
    return hot, workers, extra


@contextmanager
def stack_env(database_url: str | None) -> Iterator[tuple[dict[str, str], str]]:
    """The profiled stack's environment (the bench's ZooKeeper stack) and its database's name:
    SQLite files, or a throwaway database on the PostgreSQL server given, migrated, and dropped
    after."""
    env: dict[str, str] = dict(StackConfig("zookeeper").env())
    if not database_url:
        yield env, "sqlite"
        return
    url, drop = throwaway_database(database_url)
    env["ORDER_DATABASE_URL"] = env["STOCK_DATABASE_URL"] = url
    migrations.upgrade(url, "order")
    migrations.upgrade(url, "stock")
    try:
        yield env, "postgresql"
    finally:
        drop()


def _profile_with_database(
    workers: dict[str, int],
    run: Callable[[], Any],
    out: Path,
    args: argparse.Namespace,
    extra: dict[str, int],
    env: dict[str, str],
) -> dict[str, Any]:
    """profile(), with PostgreSQL's CPU per order over the same load when the stack is on it."""
    url = env.get("STOCK_DATABASE_URL")
    database = DatabaseCpu.of(url)[0] if url else None
    if database:
        database.start()
    summary = profile(workers, run, out, args, extra)
    if database:
        summary["postgres_ms_per_order"] = {
            k: round(v * 1000 / max(summary["orders"], 1), 3) for k, v in database.stop().items()
        }
        database.close()
    return summary


def _profile_stack(out: Path, env: dict[str, str], args: argparse.Namespace) -> dict[str, Any]:
    state = stack.up(home=out / "stack", extra_env=env, say=lambda *_: None)
    try:
        hot, workers, extra = warmed(state, args.concurrency)
        run = lambda: order_load(state.order_url, hot, args.orders, args.concurrency)  # noqa: E731
        return _profile_with_database(workers, run, out, args, extra, env)
    finally:
        stack.down(home=out / "stack", say=lambda *_: None)


def _profile_peer(out: Path, env: dict[str, str], args: argparse.Namespace) -> dict[str, Any]:
    url = env.get("STOCK_DATABASE_URL") or f"sqlite:///{out / 'peer.db'}"
    prepare(url, {"profile-peer-hot": 100_000_000})
    peer = start_peer(out / "peer", url)
    try:
        order_load(peer.url, ["profile-peer-hot"], 400, args.concurrency)
        workers = {f"peer.{i}": pid for i, pid in enumerate(sorted(children(peer.pid)))}
        run = lambda: order_load(peer.url, ["profile-peer-hot"], args.orders, args.concurrency)  # noqa: E731
        return _profile_with_database(workers, run, out, args, {}, env)
    finally:
        peer.stop()


if __name__ == "__main__":
    sys.exit(main())
