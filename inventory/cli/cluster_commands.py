"""The commands of the multi-node cluster: cluster up | down | status | configs, and chaos."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from inventory.cli.errors import UsageError

console = Console()


def cmd_cluster(args: argparse.Namespace) -> int:
    from inventory.cluster import deploy, netns
    from inventory.cluster.status import status as cluster_status
    from inventory.local.servers import ServerError

    if args.action == "configs":
        from inventory.cluster import examples

        for path in examples.write(Path(args.into)):
            console.print(str(path))
        return 0
    try:
        if args.action == "up":
            settings = {
                "LOCK_BACKEND": args.lock,
                "FENCING": None if args.fencing is None else str(args.fencing).lower(),
            }
            started = deploy.up(args.workers, args.threads, settings, say=console.print)
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
        r["running"] for r in status["reconcilers"]
    ]
    return 0 if all(running) else 1


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
    for r in status.get("reconcilers", []):  # type: ignore[attr-defined]
        role = "leads" if r["leader"] else "stands by"
        running = "running" if r["running"] else "NOT RUNNING"
        console.print(f"reconciler {r['name']} on {r['host']}: {running}, {role}")
    for key in ("order_url", "stock_url", "database", "redis", "secrets_file"):
        console.print(f"{key:14} {status[key]}")


def cmd_chaos(args: argparse.Namespace) -> int:
    from inventory.chaos import checker, nemesis, report
    from inventory.chaos.run import ChaosConfig, ChaosError, run_chaos

    if args.faults:
        faults = [f.strip() for f in args.faults.split(",") if f.strip()]
    else:
        faults = list(nemesis.QUICK if args.quick else nemesis.FAULTS)
    settings = {}
    if args.lock:
        settings["LOCK_BACKEND"] = args.lock
    if args.no_fencing:
        settings["FENCING"] = "false"
    config = ChaosConfig(
        faults=faults,
        min_orders=args.orders if args.orders is not None else (500 if args.quick else 10_000),
        baseline=5.0 if args.quick else 10.0,
        recover=5.0 if args.quick else 8.0,
        settings=settings,
        seed=args.seed,
        folder=Path(args.report),
    )
    try:
        result = run_chaos(config, say=console.print)
    except ChaosError as exc:
        raise UsageError(str(exc)) from exc
    console.print(report.markdown(result["table"], result["verdicts"]), markup=False)
    for what, why in result["not_available"].items():
        console.print(f"[yellow]not available: {what}: {why}")
    verdict = result["verdict"]
    colour = {"valid": "green", "violated": "bold red", "unknown": "yellow"}[verdict]
    console.print(
        f"[{colour}]{verdict}[/]: {result['orders']} orders, {len(faults)} faults; "
        f"report in {args.report}"
    )
    return checker.EXIT_CODES[verdict]
