"""The commands of the local stack and its data: up, down, status, seed, migrate, check,
reconcile."""

from __future__ import annotations

import argparse
import json
import os
import re

import httpx
from rich.console import Console

from inventory.cli.errors import UsageError
from inventory.cli.status_command import no_stack, print_status
from inventory.local import homes, stack, stack_state
from inventory.local.databases import VARIABLES, existing_database, migrate_command, usable_url
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
    print_status(state)
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    stack.down(say=console.print)
    for leftover in homes.left_behind():
        homes.clean_up(leftover)
        console.print(
            f"stopped {len(leftover.pids)} processes left behind in {leftover.home}, and removed it"
        )
    return 0


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
    from inventory.local.client import StackClient

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


def database_urls(state: stack_state.StackState | None) -> dict[str, str]:
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

    urls = database_urls(stack_state.load_state())
    for history, url in urls.items():  # all checked before any is migrated
        usable_url(url, VARIABLES[history] if os.environ.get(VARIABLES[history]) else history)
    for history, url in urls.items():
        migrations.upgrade(url, history)
        console.print(f"{history} database at head: {url}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from inventory.check import print_results, results_json, run_check

    state = stack_state.load_state()
    order_url, order_source = check_url(args.order_db, "order", state)
    stock_url, stock_source = check_url(args.stock_db, "stock", state)
    if not order_url or not stock_url:
        raise UsageError(
            "no databases: give --order-db and --stock-db, set ORDER_DATABASE_URL and "
            "STOCK_DATABASE_URL, or run `inventory up`"
        )
    initial = dict(parse_seed(pair) for pair in args.initial or [])
    fix = migrate_command({"order": order_url, "stock": stock_url})
    existing_database(order_url, order_source, fix)  # before an engine creates an empty file
    existing_database(stock_url, stock_source, fix)
    results = run_check(
        order_url,
        stock_url,
        goods_prefix=args.goods_prefix,
        initial=initial,
        sources=(order_source, stock_source),
    )
    if args.json:
        print(json.dumps(results_json(results), indent=2))
    else:
        print_results(results, console)
    return 0 if all(r.ok for r in results) else 1


def check_url(
    given: str | None, history: str, state: stack_state.StackState | None
) -> tuple[str | None, str]:
    """The URL `check` reads `history` from, and where it came from (for its errors)."""
    variable = VARIABLES[history]
    if given:
        return given, f"--{history}-db"
    if os.environ.get(variable):
        return os.environ[variable], variable
    url = getattr(state, f"{history}_database_url") if state else None
    return url, str(stack_state.home_dir() / stack_state.STATE_FILE)


def cmd_reconcile(args: argparse.Namespace) -> int:
    from datetime import timedelta

    from order_service.reconcile import reconcile
    from order_service.stock_client import StockClient
    from order_service.store import OrderStore
    from shared.db import make_engine

    state = stack_state.load_state()
    if state is None and not (
        os.environ.get("ORDER_DATABASE_URL") and os.environ.get("STOCK_SERVICE_URL")
    ):
        raise UsageError(
            "no stack to reconcile: start one with `inventory up`, or set ORDER_DATABASE_URL "
            "and STOCK_SERVICE_URL"
        )
    env = {**(state.env() if state else {}), **os.environ}
    settings = Settings.from_env(env)
    usable_url(settings.order_database_url, "ORDER_DATABASE_URL")
    store = OrderStore(make_engine(settings.order_database_url))
    stock_client = StockClient(
        settings.stock_service_url,
        settings.stock_call_timeout,
        0,
        60,
        0,
        token=settings.stock_service_token,
    )
    try:
        report = reconcile(store, stock_client, timedelta(seconds=args.older_than))
    finally:
        stock_client.close()
        store.engine.dispose()
    console.print(
        f"examined {report.examined} PENDING orders in {report.pages} page(s): "
        f"{len(report.confirmed)} confirmed (the stock database has their deduction), "
        f"{len(report.failed)} failed (their flags voided: nothing deducted, nothing will be), "
        f"{len(report.mismatched)} with flows that differ from their lines, "
        f"{report.unreachable} not checked (stock service unreachable)"
    )
    return 1 if report.mismatched or report.unreachable else 0


def cmd_reconciler(args: argparse.Namespace) -> int:
    import socket
    import threading

    from order_service.reconciler_service import serve
    from shared.logs import configure_logging

    state = stack_state.load_state()
    env = {**(state.env() if state else {}), **os.environ}
    settings = Settings.from_env(env)
    configure_logging(settings.log_level)
    name = args.name or f"{socket.gethostname()}:{os.getpid()}"
    serve(settings, name, threading.Event())  # until SIGTERM or ^C, which resign on the way out
    return 0


def require_stack() -> stack_state.StackState:
    state = stack_state.load_state()
    if state is None or not stack_state.is_running(state):
        raise UsageError(no_stack(state))
    return state
