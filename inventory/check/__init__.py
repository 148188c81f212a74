"""`inventory check`: the invariants of the design (invariants.py), read from the order and
stock databases (SQLite, PostgreSQL or MySQL; snapshot.py), each printed with its numbers; and
I10, the stock events of the stream against the outbox and the levels (events.py, read by
events_source.py)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from inventory.check.events import OutboxRow, check_events
from inventory.check.invariants import (
    HOLD_BOUND,
    REFUSED,
    CheckResult,
    check_invariants,
    refused_for_lack_of_stock,
)
from inventory.check.snapshot import Snapshot, read_orders, read_snapshot
from inventory.local.databases import migrate_command, require_tables
from shared.database.engines import make_engine

__all__ = [
    "HOLD_BOUND",
    "REFUSED",
    "CheckResult",
    "OutboxRow",
    "Snapshot",
    "check_events",
    "check_invariants",
    "print_results",
    "read_orders",
    "read_snapshot",
    "refused_for_lack_of_stock",
    "results_json",
    "run_check",
]


def run_check(
    order_url: str,
    stock_url: str,
    goods_prefix: str = "",
    initial: dict[str, int] | None = None,
    sources: tuple[str, str] = ("order database", "stock database"),
) -> list[CheckResult]:
    """`sources`: where each URL came from (an option, a variable), for the error that a
    database was never migrated (DatabaseProblem), which says so rather than "no such table"."""
    order_engine, stock_engine = make_engine(order_url), make_engine(stock_url)
    fix = migrate_command({"order": order_url, "stock": stock_url})
    try:
        require_tables(order_engine, "order", sources[0], fix)
        require_tables(stock_engine, "stock", sources[1], fix)
        return check_invariants(read_snapshot(order_engine, stock_engine, goods_prefix), initial)
    finally:
        order_engine.dispose()
        stock_engine.dispose()


def results_json(results: list[CheckResult]) -> list[dict[str, Any]]:
    return [asdict(r) for r in results]


def print_results(results: list[CheckResult], console: Any) -> None:
    from rich.table import Table

    table = Table("", "check", "verdict", "numbers", title="invariants")
    for r in results:
        verdict = "[green]ok" if r.ok else "[bold red]VIOLATED"
        table.add_row(r.invariant, r.name, verdict, r.detail)
    console.print(table)
