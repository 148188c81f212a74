"""`inventory cluster up | down | status | configs`: the multi-node cluster in network
namespaces (inventory/cluster/ builds it)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from inventory.cli.errors import UsageError
from inventory.cli.options import at_least

NAME = "cluster"
SUMMARY = (
    "a multi-node cluster in network namespaces (root): up, down, status; configs writes "
    "its configuration files with placeholder secrets (deploy/cluster/); bench-latency "
    "measures the flow against the one-database peer with its PostgreSQL links delayed"
)

console = Console()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    p = parser
    p.add_argument("action", choices=["up", "down", "status", "configs", "bench-latency"])
    p.add_argument("--into", metavar="DIR", default="deploy/cluster", help="configs: where they go")
    p.add_argument(
        "--workers", type=at_least(1), default=2, help="up: gunicorn workers per replica"
    )
    p.add_argument("--threads", type=at_least(1), default=8, help="up: threads per stock worker")
    p.add_argument("--lock", choices=["zookeeper", "redis", "none"], help="up: LOCK_BACKEND")
    p.add_argument(
        "--no-fencing", dest="fencing", action="store_false", default=None, help="up: FENCING=false"
    )
    p.add_argument(
        "--link-delay-ms",
        type=float,
        metavar="MS",
        help="up: a proxy adding MS each way between the balancers and PostgreSQL and between "
        "its hosts (replication); off by default",
    )
    p.add_argument("--json", action="store_true", help="status: as JSON")
    p.add_argument(
        "--delays",
        type=_floats,
        default=[0.0, 0.5, 1.0],
        help="bench-latency: ms added each way, one after the other (default 0,0.5,1)",
    )
    p.add_argument(
        "--callers",
        type=lambda text: [int(c) for c in _floats(text)],
        default=[16, 64, 128],
        help="bench-latency: caller counts (default 16,64,128)",
    )
    p.add_argument("--rounds", type=at_least(1), default=3, help="bench-latency: rounds")
    p.add_argument("--orders", type=at_least(50), default=600, help="bench-latency: per load")
    p.add_argument("--report", metavar="DIR", help="bench-latency: JSON and chart into DIR")


def run(args: argparse.Namespace) -> int:
    from inventory.cluster import deploy, netns
    from inventory.cluster.status import status as cluster_status
    from inventory.local.servers import ServerError

    if args.action == "configs":
        from inventory.cluster import examples

        for path in examples.write(Path(args.into)):
            console.print(str(path))
        return 0
    try:
        if args.action == "bench-latency":
            from inventory.cluster.latency_run import run_latency_bench

            return run_latency_bench(args, console)
        if args.action == "up":
            settings = {
                "LOCK_BACKEND": args.lock,
                "FENCING": None if args.fencing is None else str(args.fencing).lower(),
            }
            started = deploy.up(
                args.workers, args.threads, settings, console.print, args.link_delay_ms
            )
            print_cluster(cluster_status(started), as_json=False)
            return 0
        if args.action == "down":
            deploy.down(say=console.print)
            return 0
    except (netns.NetworkError, ServerError, ValueError) as exc:
        raise UsageError(str(exc)) from exc
    state = deploy.load_state()
    if state is None:
        if args.json:
            print(json.dumps({"running": False, "namespaces_left": netns.namespaces()}))
        else:
            console.print("no cluster running (start one with: inventory cluster up)")
        return 1
    status = cluster_status(state)
    print_cluster(status, as_json=args.json)
    running = [h["running"] for h in status["hosts"]] + [
        r["running"] for r in [*status["reconcilers"], *status["relays"], *status["deliverers"]]
    ]
    return 0 if all(running) else 1


def _floats(text: str) -> list[float]:
    try:
        return [float(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"numbers separated by commas: {text!r}") from exc


def print_cluster(status: dict[str, object], as_json: bool) -> None:
    if as_json:
        print(json.dumps(status, indent=2))
        return
    table = Table("host", "address", "role now", "programs (pid)", "running", title="cluster")
    for h in status["hosts"]:  # type: ignore[attr-defined]
        table.add_row(
            h["name"],
            h["address"],
            h["role"],
            " ".join(f"{name} ({pid})" for name, pid in h["programs"].items()),
            "yes" if h["running"] else "NO",
        )
    console.print(table)
    for kind in ("reconcilers", "relays", "deliverers"):
        for r in status.get(kind, []):  # type: ignore[attr-defined]
            role = "leads" if r["leader"] else "stands by"
            running = "running" if r["running"] else "NOT RUNNING"
            console.print(f"{kind[:-1]} {r['name']} on {r['host']}: {running}, {role}")
    for key in ("order_url", "stock_url", "database", "redis", "secrets_file"):
        console.print(f"{key:14} {status[key]}")
