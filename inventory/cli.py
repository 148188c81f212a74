"""The `inventory` command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from rich.console import Console

from inventory import stack

console = Console()


def cmd_up(args: argparse.Namespace) -> int:
    state = stack.up(workers=args.workers, threads=args.threads, say=console.print)
    print_status(state, as_json=False)
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    stack.down(say=console.print)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    state = stack.load_state()
    if state is None:
        if args.json:
            print(json.dumps({"running": False}))
        else:
            console.print("no stack running (start one with: inventory up)")
        return 1
    print_status(state, as_json=args.json)
    return 0 if stack.is_running(state) else 1


def print_status(state: stack.StackState, as_json: bool) -> None:
    data = state.as_json()
    if as_json:
        print(json.dumps(data, indent=2))
        return
    console.print(f"order service   {state.order_url}")
    console.print(f"stock service   {state.stock_url}")
    console.print(f"zookeeper       {state.zk_hosts}")
    console.print(f"redis           {state.redis_url}")
    console.print(f"order database  {state.order_database_url}")
    console.print(f"stock database  {state.stock_database_url}")
    console.print(f"lock            {state.lock_backend} / {state.lock_scope}")
    running = ", ".join(f"{n}={'up' if alive else 'DOWN'}" for n, alive in data["running"].items())
    console.print(f"processes       {running or '(none started by inventory up)'}")


def cmd_seed(args: argparse.Namespace) -> int:
    from inventory.client import StackClient

    state = require_stack()
    client = StackClient(state)
    try:
        for pair in args.levels:
            goods_id, _, num = pair.partition("=")
            if not num.isdigit():
                console.print(f"[red]not GOODS=NUM: {pair}")
                return 2
            row = client.seed(goods_id, int(num))
            console.print(f"{goods_id} = {row['num']} (seed version {row['seedVersion']})")
    finally:
        client.close()
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    import os

    import migrations

    for history, var in (("order", "ORDER_DATABASE_URL"), ("stock", "STOCK_DATABASE_URL")):
        url = os.environ.get(var, f"sqlite:///{history}.db")
        migrations.upgrade(url, history)
        console.print(f"{history} database at head: {url}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from inventory.demo import run_demo

    state = stack.load_state()
    started_here = state is None or not stack.is_running(state)
    if started_here:
        console.print("starting the local stack (inventory up) ...")
        state = stack.up(say=console.print)
    assert state is not None
    try:
        return run_demo(state, console)
    finally:
        if started_here and not args.keep:
            stack.down(say=console.print)


def require_stack() -> stack.StackState:
    state = stack.load_state()
    if state is None or not stack.is_running(state):
        console.print("[red]no stack running: start one with `inventory up`")
        raise SystemExit(1)
    return state


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="inventory", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("up", help="start the local stack in the background")
    p.add_argument("--workers", type=int, default=2, help="gunicorn workers per service")
    p.add_argument("--threads", type=int, default=8, help="threads per stock-service worker")
    p.set_defaults(func=cmd_up)
    sub.add_parser("down", help="stop what `up` started").set_defaults(func=cmd_down)
    p = sub.add_parser("status", help="URLs and addresses of the running stack")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_status)
    p = sub.add_parser("seed", help="set stock levels: inventory seed g1=100 g2=5")
    p.add_argument("levels", nargs="+", metavar="GOODS=NUM")
    p.set_defaults(func=cmd_seed)
    sub.add_parser(
        "migrate", help="migrate ORDER_DATABASE_URL and STOCK_DATABASE_URL to head"
    ).set_defaults(func=cmd_migrate)
    p = sub.add_parser("demo", help="the POST /genOrder demo (starts the stack if needed)")
    p.add_argument("--keep", action="store_true", help="leave a stack it started running")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a clear line for the user, not a traceback
        from inventory.servers import ServerError

        if isinstance(exc, ServerError):
            console.print(f"[red]{exc}")
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
