"""The commands of the local stack and its data: up, down, status, seed, migrate, check,
reconcile."""

from __future__ import annotations

import argparse
import json
import os
import re
from typing import Any

import httpx
from rich.console import Console

from inventory import homes, stack
from inventory.cli.errors import UsageError
from shared.schemas import IDENTIFIER_PATTERN
from shared.settings import Settings

console = Console()


def cmd_up(args: argparse.Namespace) -> int:
    try:
        state = stack.up(
            workers=args.workers,
            threads=args.threads,
            reconcilers=args.reconcilers,
            monitoring=args.monitoring,
            say=console.print,
        )
    except stack.SettingsError as exc:
        raise UsageError(str(exc)) from exc
    print_status(state, as_json=False)
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    stack.down(say=console.print)
    for leftover in homes.left_behind():
        homes.clean_up(leftover)
        console.print(
            f"stopped {len(leftover.pids)} processes left behind in {leftover.home}, and removed it"
        )
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    state = stack.load_state()
    leftovers = homes.left_behind()
    if args.json:
        data: dict[str, Any] = state.as_json() if state else {"running": False}
        data["left_behind"] = [{"home": str(x.home), "pids": x.pids} for x in leftovers]
        print(json.dumps(data, indent=2))
    elif state is None:
        console.print("no stack running (start one with: inventory up)")
    else:
        print_status(state, as_json=False)
    if leftovers and not args.json:
        for leftover in leftovers:
            console.print(
                f"[yellow]left behind by a run that was killed: {leftover.home} "
                f"({len(leftover.pids)} processes still running)"
            )
        console.print("[yellow]`inventory down` stops them and removes their folders")
    return 0 if state is not None and stack.is_running(state) else 1


def print_status(state: stack.StackState, as_json: bool) -> None:
    data = state.as_json()
    if as_json:
        print(json.dumps(data, indent=2))
        return
    console.print(f"order service   {state.order_url}")
    console.print(f"stock service   {state.stock_url}")
    console.print(f"zookeeper       {state.zk_hosts}")
    console.print(f"redis           {state.redis_url}")
    if state.etcd_endpoints:
        console.print(f"etcd            {state.etcd_endpoints}")
    if state.redlock_urls:
        console.print(f"redlock         {state.redlock_urls}")
    if state.prometheus_url:
        console.print(f"prometheus      {state.prometheus_url}  (scraping both services)")
    console.print(f"order database  {state.order_database_url}")
    console.print(f"stock database  {state.stock_database_url}")
    console.print(f"lock            {state.lock_backend} / {state.lock_scope}")
    console.print(f"gunicorn        --workers {state.workers} --threads {state.threads}")
    running = ", ".join(f"{n}={'up' if alive else 'DOWN'}" for n, alive in data["running"].items())
    console.print(f"processes       {running or '(none started by inventory up)'}")


def parse_seed(pair: str) -> tuple[str, int]:
    goods, _, num_text = pair.partition("=")
    if not re.fullmatch(IDENTIFIER_PATTERN, goods) or not re.fullmatch(r"-?\d+", num_text):
        raise UsageError(
            f"not GOODS=NUM: {pair!r} (a goods id of letters, digits and _.:- then =, "
            "then a level, e.g. g1=100)"
        )
    num, highest = int(num_text), Settings().max_stock_level  # what PUT /stock accepts
    if not 0 <= num <= highest:
        why = "a level cannot be negative" if num < 0 else f"at most {highest:,}"
        raise UsageError(f"{pair}: the level must be between 0 and {highest} ({why})")
    return goods, num


def cmd_seed(args: argparse.Namespace) -> int:
    from inventory.client import StackClient

    levels = [parse_seed(pair) for pair in args.levels]  # all checked before any is set
    state = require_stack()
    client = StackClient(state)
    try:
        for goods_id, num in levels:
            try:
                row = client.seed(goods_id, num)
            except httpx.HTTPStatusError as exc:
                raise UsageError(f"{goods_id}: {server_message(exc.response)}") from exc
            console.print(f"{goods_id} = {row['num']} (seed version {row['seedVersion']})")
    finally:
        client.close()
    return 0


def server_message(response: httpx.Response) -> str:
    """The service's own `{"error": ...}`, which says what was wrong."""
    try:
        return str(response.json()["error"])
    except (ValueError, KeyError, TypeError):
        return f"HTTP {response.status_code}"


def database_urls(state: stack.StackState | None) -> dict[str, str]:
    """ORDER_/STOCK_DATABASE_URL, else the running stack's; a user mistake if neither."""
    urls = {}
    for history, variable in (("order", "ORDER_DATABASE_URL"), ("stock", "STOCK_DATABASE_URL")):
        url = os.environ.get(variable) or (
            getattr(state, f"{history}_database_url") if state else None
        )
        if not url:
            raise UsageError(
                f"which {history} database? set {variable}, or start a stack with `inventory up`"
            )
        urls[history] = url
    return urls


def cmd_migrate(args: argparse.Namespace) -> int:
    import migrations

    for history, url in database_urls(stack.load_state()).items():
        migrations.upgrade(url, history)
        console.print(f"{history} database at head: {url}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from inventory.check import print_results, results_json, run_check

    state = stack.load_state()
    order_url = (
        args.order_db
        or os.environ.get("ORDER_DATABASE_URL")
        or (state.order_database_url if state else None)
    )
    stock_url = (
        args.stock_db
        or os.environ.get("STOCK_DATABASE_URL")
        or (state.stock_database_url if state else None)
    )
    if not order_url or not stock_url:
        raise UsageError(
            "no databases: give --order-db and --stock-db, set ORDER_DATABASE_URL and "
            "STOCK_DATABASE_URL, or run `inventory up`"
        )
    initial = dict(parse_seed(pair) for pair in args.initial or [])
    results = run_check(order_url, stock_url, goods_prefix=args.goods_prefix, initial=initial)
    if args.json:
        print(json.dumps(results_json(results), indent=2))
    else:
        print_results(results, console)
    return 0 if all(r.ok for r in results) else 1


def cmd_reconcile(args: argparse.Namespace) -> int:
    from datetime import timedelta

    from order_service.reconcile import reconcile
    from order_service.stock_client import StockClient
    from order_service.store import OrderStore
    from shared.db import make_engine

    state = stack.load_state()
    if state is None and not (
        os.environ.get("ORDER_DATABASE_URL") and os.environ.get("STOCK_SERVICE_URL")
    ):
        raise UsageError(
            "no stack to reconcile: start one with `inventory up`, or set ORDER_DATABASE_URL "
            "and STOCK_SERVICE_URL"
        )
    env = {**(state.env() if state else {}), **os.environ}
    settings = Settings.from_env(env)
    store = OrderStore(make_engine(settings.order_database_url))
    stock_client = StockClient(settings.stock_service_url, settings.stock_call_timeout, 0, 60, 0)
    try:
        report = reconcile(
            store,
            stock_client,
            timedelta(seconds=args.older_than),
            timedelta(hours=args.horizon_hours),
            timedelta(seconds=settings.flag_ttl),
        )
    finally:
        stock_client.close()
        store.engine.dispose()
    console.print(
        f"examined {report.examined} PENDING/FAILED orders: "
        f"{len(report.confirmed)} confirmed (deducted late), "
        f"{len(report.failed)} failed (flag expired, no flow), "
        f"{len(report.mismatched)} with flows that differ from their lines, "
        f"{report.unreachable} not checked (stock service unreachable)"
    )
    return 1 if report.mismatched or report.unreachable else 0


def cmd_reconciler(args: argparse.Namespace) -> int:
    import socket
    import threading

    from order_service.reconciler_service import serve
    from shared.logs import configure_logging

    state = stack.load_state()
    env = {**(state.env() if state else {}), **os.environ}
    settings = Settings.from_env(env)
    configure_logging(settings.log_level)
    name = args.name or f"{socket.gethostname()}:{os.getpid()}"
    serve(settings, name, threading.Event())  # until SIGTERM or ^C, which resign on the way out
    return 0


def require_stack() -> stack.StackState:
    state = stack.load_state()
    if state is None or not stack.is_running(state):
        raise UsageError("no stack running: start one with `inventory up`")
    return state
