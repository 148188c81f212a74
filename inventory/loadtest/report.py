"""What a load test shows: a summary table with the ledger, a JSON report and a chart."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from rich.console import Console
from rich.table import Table

from inventory.check import print_results, results_json
from inventory.loadtest.buyers import LoadResult
from inventory.local.stack_state import StackState


def print_summary(result: LoadResult, state: StackState, console: Console) -> None:
    s = result.summary()
    table = Table("", "", title=f"load test: lock {state.lock_backend}/{state.lock_scope}")
    c = result.config
    table.add_row("orders sent", f"{s['orders']} (+{s['duplicate_submits']} double submits)")
    ids = f", ids of {c.id_length} characters" if c.id_length else ""
    table.add_row("goods x stock", f"{c.goods} x {c.stock} (lines per order {c.items}{ids})")
    table.add_row("concurrency", str(c.concurrency))
    table.add_row("confirmed", str(s["confirmed"]))
    table.add_row("failed", str(s["failed"]))
    table.add_row("errors", ", ".join(f"{k}={v}" for k, v in s["errors"].items()) or "0")
    table.add_row("orders/s", f"{s['orders_per_s']}")
    lat = s["latency_ms"]
    table.add_row("latency p50/p95/p99", f"{lat['p50']} / {lat['p95']} / {lat['p99']} ms")
    table.add_row("double submits with two orders", str(s["idempotency_breaches"]))
    table.add_row("client retries (same key)", str(s["client_retries"]))
    if result.after_sale:
        answers = ", ".join(f"{k} x{v}" for k, v in sorted(result.after_sale.items()))
        table.add_row("cancels, pays and restocks (answers)", answers)
    if result.ledger:
        ledger = result.ledger
        restocked = f" + restocked {ledger['restocked']}" if ledger.get("restocked") else ""
        table.add_row(
            "ledger",
            f"seeded {ledger['seeded']}{restocked} - final {ledger['final']} = "
            f"deducted {ledger['deducted']} - returned {ledger['returned']}",
        )
    if result.settled_s is not None:
        table.add_row("holds and cancels settled", f"{result.settled_s:.1f} s after the load")
    console.print(table)
    print_results(result.checks, console)


def write_report(result: LoadResult, state: StackState, folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    report = folder / "loadtest.json"
    report.write_text(
        json.dumps(
            {
                "config": asdict(result.config),
                "lock": {"backend": state.lock_backend, "scope": state.lock_scope},
                "summary": result.summary(),
                "checks": results_json(result.checks),
                "attempts": [asdict(a) for a in result.attempts],
            },
            indent=2,
        )
    )
    chart = folder / "loadtest.png"
    draw_chart(result, state, chart)
    return report, chart


def draw_chart(result: LoadResult, state: StackState, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for outcome, colour in (("confirmed", "tab:green"), ("failed", "tab:orange")):
        values = [a.latency * 1000 for a in result.attempts if a.outcome == outcome]
        if values:
            left.hist(values, bins=40, alpha=0.7, color=colour, label=f"{outcome} ({len(values)})")
    left.set_xlabel("latency of POST /genOrder (ms)")
    left.set_ylabel("requests")
    left.set_title("latency distribution")
    left.legend()
    confirmed = sorted(a.finished for a in result.primary if a.outcome == "confirmed")
    right.step(confirmed, range(1, len(confirmed) + 1), where="post", color="tab:green")
    right.axhline(
        result.config.stock * result.config.goods, color="grey", linestyle="--", label="stock"
    )
    right.set_xlabel("seconds since start")
    right.set_ylabel("confirmed orders")
    right.set_title("confirmed orders over time")
    right.legend()
    s = result.summary()
    fig.suptitle(
        f"{s['orders']} orders, concurrency {result.config.concurrency}, lock "
        f"{state.lock_backend}/{state.lock_scope}: {s['confirmed']} confirmed, "
        f"{s['orders_per_s']} orders/s, "
        f"{'no violation' if result.ok else 'VIOLATIONS: ' + ', '.join(s['violations'])}"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def print_violations(result: LoadResult, console: Console) -> None:
    for check in result.checks:
        if not check.ok:
            console.print(f"[bold red]violated {check.invariant} {check.name}[/]: {check.detail}")
    if result.idempotency_breaches:
        console.print(
            f"[bold red]double submits that made two orders: {result.idempotency_breaches}"
        )
