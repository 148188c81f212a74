"""`inventory loadtest`: many buyers over real HTTP (asyncio + httpx) against a running stack,
or one started for the run with the strategy asked for; then the invariant check.

Goods ids are unique to the run (a prefix), so the check reads only this run's rows even on a
stack that has seen other runs.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.table import Table

from inventory.check import CheckResult, print_results, results_json, run_check
from inventory.stack import StackState


@dataclass
class LoadConfig:
    orders: int = 200
    concurrency: int = 32
    goods: int = 1
    stock: int = 40
    items: int = 1  # distinct goods ids per order, one unit each
    duplicate_ratio: float = 0.0  # share of orders submitted twice with one Idempotency-Key
    seed: int = 1
    timeout: float = 120.0


@dataclass
class Attempt:
    order: int
    status: int | None
    outcome: str  # confirmed | failed | error:<kind>
    latency: float
    finished: float  # seconds since the start of the run
    order_id: str | None
    duplicate: bool


@dataclass
class LoadResult:
    config: LoadConfig
    prefix: str
    elapsed: float
    attempts: list[Attempt]
    checks: list[CheckResult] = field(default_factory=list)
    idempotency_breaches: int = 0
    client_retries: int = 0  # transport errors retried with the same Idempotency-Key

    @property
    def primary(self) -> list[Attempt]:
        return [a for a in self.attempts if not a.duplicate]

    def summary(self) -> dict[str, Any]:
        outcomes = Counter(a.outcome for a in self.primary)
        latencies = sorted(a.latency for a in self.attempts)
        errors = {k: v for k, v in outcomes.items() if k.startswith("error")}
        return {
            "orders": len(self.primary),
            "duplicate_submits": len(self.attempts) - len(self.primary),
            "confirmed": outcomes.get("confirmed", 0),
            "failed": outcomes.get("failed", 0),
            "errors": errors,
            "elapsed_s": round(self.elapsed, 3),
            "orders_per_s": round(len(self.primary) / self.elapsed, 1) if self.elapsed else 0,
            "latency_ms": {
                f"p{p}": round(percentile(latencies, p) * 1000, 1) for p in (50, 95, 99)
            },
            "idempotency_breaches": self.idempotency_breaches,
            "client_retries": self.client_retries,
            "violations": [c.name for c in self.checks if not c.ok],
        }

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks) and self.idempotency_breaches == 0


def percentile(sorted_values: list[float], p: float) -> float:
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, max(0, round(p / 100 * len(sorted_values)) - 1))
    return sorted_values[index]


def plan_orders(config: LoadConfig, goods_ids: list[str]) -> list[tuple[list[str], bool]]:
    rng = random.Random(config.seed)
    items = min(config.items, len(goods_ids))
    return [
        (rng.sample(goods_ids, items), rng.random() < config.duplicate_ratio)
        for _ in range(config.orders)
    ]


async def drive(
    state: StackState, config: LoadConfig, console: Console | None = None
) -> LoadResult:
    prefix = f"lt{config.seed}-{uuid.uuid4().hex[:6]}-"
    goods_ids = [f"{prefix}{k}" for k in range(config.goods)]
    limits = httpx.Limits(
        max_connections=config.concurrency * 2, max_keepalive_connections=config.concurrency * 2
    )
    async with httpx.AsyncClient(timeout=config.timeout, limits=limits) as client:
        for goods in goods_ids:
            seeded = await client.put(
                f"{state.stock_url}/stock/{goods}",
                json={"num": config.stock},
                headers=state.admin_headers(),
            )
            seeded.raise_for_status()
        plan = plan_orders(config, goods_ids)
        gate = asyncio.Semaphore(config.concurrency)
        attempts: list[Attempt] = []
        breaches = 0
        client_retries = 0
        started = time.perf_counter()
        progress = Progress(
            "[bold]orders",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            disable=console is None,
        )

        async def submit(i: int, body: dict[str, Any], key: str, dup: bool) -> Attempt:
            """Every order carries an Idempotency-Key, so a transport error (the request may
            or may not have arrived) is retried safely, as a well-behaved client would."""
            nonlocal client_retries
            t0 = time.perf_counter()
            for attempt in range(3):
                try:
                    response = await client.post(
                        f"{state.order_url}/genOrder", json=body, headers={"Idempotency-Key": key}
                    )
                except httpx.TransportError as exc:
                    if attempt == 2:
                        t1 = time.perf_counter()
                        return Attempt(
                            i, None, f"error:{type(exc).__name__}", t1 - t0, t1 - started, None, dup
                        )
                    client_retries += 1
                    continue
                break
            status = response.status_code
            data = response.json()
            outcome = {200: "confirmed", 409: "failed"}.get(status, f"error:http_{status}")
            order_id = data.get("orderId") if isinstance(data, dict) else None
            t1 = time.perf_counter()
            return Attempt(i, status, outcome, t1 - t0, t1 - started, order_id, dup)

        async def one_order(i: int, goods: list[str], twice: bool) -> None:
            nonlocal breaches
            body = {"userId": f"buyer-{i}", "goodsIds": goods}
            key = f"{prefix}key-{i}"
            async with gate:
                if twice:
                    first, second = await asyncio.gather(
                        submit(i, body, key, False), submit(i, body, key, True)
                    )
                    attempts.extend((first, second))
                    if first.order_id and second.order_id and first.order_id != second.order_id:
                        breaches += 1
                else:
                    attempts.append(await submit(i, body, key, False))
            progress.advance(task)

        with progress:
            task = progress.add_task("orders", total=config.orders)
            await asyncio.gather(*(one_order(i, g, twice) for i, (g, twice) in enumerate(plan)))
        elapsed = time.perf_counter() - started
    return LoadResult(
        config,
        prefix,
        elapsed,
        attempts,
        idempotency_breaches=breaches,
        client_retries=client_retries,
    )


def run_loadtest(
    state: StackState, config: LoadConfig, console: Console | None = None
) -> LoadResult:
    result = asyncio.run(drive(state, config, console))
    result.checks = run_check(
        state.order_database_url, state.stock_database_url, goods_prefix=result.prefix
    )
    return result


def print_summary(result: LoadResult, state: StackState, console: Console) -> None:
    s = result.summary()
    table = Table("", "", title=f"load test: lock {state.lock_backend}/{state.lock_scope}")
    c = result.config
    table.add_row("orders sent", f"{s['orders']} (+{s['duplicate_submits']} double submits)")
    table.add_row("goods x stock", f"{c.goods} x {c.stock} (items per order {c.items})")
    table.add_row("concurrency", str(c.concurrency))
    table.add_row("confirmed", str(s["confirmed"]))
    table.add_row("failed", str(s["failed"]))
    table.add_row("errors", ", ".join(f"{k}={v}" for k, v in s["errors"].items()) or "0")
    table.add_row("orders/s", f"{s['orders_per_s']}")
    lat = s["latency_ms"]
    table.add_row("latency p50/p95/p99", f"{lat['p50']} / {lat['p95']} / {lat['p99']} ms")
    table.add_row("double submits with two orders", str(s["idempotency_breaches"]))
    table.add_row("client retries (same key)", str(s["client_retries"]))
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
