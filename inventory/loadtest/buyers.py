"""The load test's buyers: many over real HTTP (asyncio + httpx), each placing one order, and,
as asked, cancelling it (at once, racing its genOrder, by its Idempotency-Key; or once it is
placed, by its id), paying its hold, or leaving the hold to expire.

Goods ids are unique to the run (a prefix, goods_ids.py), so the check reads only this run's
rows even on a stack that has seen other runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

from inventory.check import CheckResult
from inventory.loadtest.after_sale import AfterSale
from inventory.loadtest.goods_ids import goods_ids as make_goods_ids
from inventory.loadtest.goods_ids import run_prefix
from inventory.loadtest.restocks import Restocker
from inventory.local.stack_state import StackState


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
    cancel_rate: float = 0.0  # share of orders cancelled: half at once, half once placed
    pay_within: int | None = None  # every order a hold; a third of the rest left to expire
    restocks: int = 0  # adjustments of reason restock during the run (restocks.py)
    restock_size: int = 0  # units each; 0: a quarter of `stock`, at least 1
    id_length: int | None = None  # goods ids padded to this many characters (goods_ids.py)
    # Seconds a buyer answered 503 (its order PENDING, or refused with Retry-After) or 202 (its
    # first request still running) sends it again under its key, as a patient client would,
    # until it is final; 0: the first answer is the order's (the default: a 503 is counted).
    resend_unknown: float = 0.0

    def restock_units(self) -> int:
        return self.restock_size or max(1, self.stock // 4)


def _retry_after(response: httpx.Response) -> float:
    """The wait a 503 asks for (its Retry-After, in seconds), 1 s when it names none; at most
    5 s."""
    try:
        return min(max(float(response.headers.get("Retry-After", "1")), 0.1), 5.0)
    except ValueError:
        return 1.0


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
    after_sale: dict[str, int] = field(default_factory=dict)  # "cancel 200": count, ...
    restocked: int = 0  # units the restocks answered 201 added
    ledger: dict[str, int] = field(default_factory=dict)  # seeded, final, deducted, returned
    settled_s: float | None = None  # seconds the holds and cancels took to settle after

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
            "after_sale": self.after_sale,
            "restocked": self.restocked,
            "ledger": self.ledger,
            "settled_s": self.settled_s,
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


@dataclass(frozen=True)
class Planned:
    goods: list[str]
    twice: bool  # submitted twice at once with one Idempotency-Key
    after: str  # none | cancel-at-once | cancel | pay | pay-cancel | expire


def plan_orders(config: LoadConfig, goods_ids: list[str]) -> list[Planned]:
    rng = random.Random(config.seed)
    items = min(config.items, len(goods_ids))
    out = []
    for _ in range(config.orders):
        goods, twice = rng.sample(goods_ids, items), rng.random() < config.duplicate_ratio
        after = "none"
        if rng.random() < config.cancel_rate:
            after = rng.choice(("cancel-at-once", "cancel"))
        elif config.pay_within:
            roll = rng.random()
            after = "expire" if roll < 1 / 3 else "pay-cancel" if roll < 1 / 2 else "pay"
        out.append(Planned(goods, twice, after))
    return out


async def drive(
    state: StackState, config: LoadConfig, console: Console | None = None
) -> LoadResult:
    prefix = run_prefix(config.seed)
    goods_ids = make_goods_ids(prefix, config.goods, config.id_length)
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
        after_sale = AfterSale(client, state.order_url, config.timeout)
        restocker = Restocker(client, state.stock_url, state.admin_headers(), goods_ids, prefix)
        gate = asyncio.Semaphore(config.concurrency)
        attempts: list[Attempt] = []
        breaches = 0
        client_retries = 0
        finished = [0]  # orders done, for the restocks' pace

        def done() -> int:
            return finished[0]

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
            resend_until = t0 + config.resend_unknown
            while response.status_code in (202, 503) and time.perf_counter() < resend_until:
                # the key answers the order's state now: settled by the reconciler, or placed
                await asyncio.sleep(_retry_after(response))
                with contextlib.suppress(httpx.TransportError):
                    response = await client.post(
                        f"{state.order_url}/genOrder", json=body, headers={"Idempotency-Key": key}
                    )
                client_retries += 1
            status = response.status_code
            data = response.json()
            outcome = {200: "confirmed", 409: "failed"}.get(status, f"error:http_{status}")
            order_id = data.get("orderId") if isinstance(data, dict) else None
            t1 = time.perf_counter()
            return Attempt(i, status, outcome, t1 - t0, t1 - started, order_id, dup)

        async def one_order(i: int, planned: Planned) -> None:
            nonlocal breaches
            body: dict[str, Any] = {"userId": f"buyer-{i}", "goodsIds": planned.goods}
            if config.pay_within:
                body["payWithinSeconds"] = config.pay_within
            key = f"{prefix}key-{i}"
            async with gate:
                at_once = (
                    asyncio.create_task(after_sale.cancel_by_key(key))
                    if planned.after == "cancel-at-once"
                    else None
                )
                if planned.twice:
                    first, second = await asyncio.gather(
                        submit(i, body, key, False), submit(i, body, key, True)
                    )
                    attempts.extend((first, second))
                    if first.order_id and second.order_id and first.order_id != second.order_id:
                        breaches += 1
                else:
                    first = await submit(i, body, key, False)
                    attempts.append(first)
                if at_once is not None:
                    await at_once
                elif first.order_id and first.status == 200:
                    await after_sale.act(planned.after, first.order_id)
            progress.advance(task)
            finished[0] += 1

        with progress:
            task = progress.add_task("orders", total=config.orders)
            # `concurrency` buyers, each taking the next order of the plan: a run of 100,000
            # orders holds that many tasks, not 100,000 (asyncio.run cancels every task on
            # Ctrl-C or SIGTERM, and 100,000 waiters on one semaphore took minutes to cancel).
            orders = iter(enumerate(plan))

            async def buyer() -> None:
                for i, planned in orders:
                    await one_order(i, planned)

            await asyncio.gather(
                *(buyer() for _ in range(config.concurrency)),
                restocker.run(config.restocks, config.restock_units(), config.orders, done),
            )
        elapsed = time.perf_counter() - started
    return LoadResult(
        config,
        prefix,
        elapsed,
        attempts,
        idempotency_breaches=breaches,
        client_retries=client_retries,
        after_sale=dict(after_sale.answers) | dict(restocker.answers),
        restocked=restocker.units,
    )
