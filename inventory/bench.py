"""`inventory bench`: what the deduction path costs, against the physical limits of its parts,
measured in one run on the same servers.

1. Limits: a kazoo lock acquire+release cycle on that ZooKeeper, a redis-py lock cycle on that
   Redis, a hot-row UPDATE + COMMIT on that stock database (each sequential, one client).
2. PUT /reduceStock throughput and p50/p99 latency, for one hot goods id and for 100 goods
   ids, for each lock backend, with LOCK_SCOPE=sku and global (a stack per configuration,
   sharing ZooKeeper, Redis and the databases).
3. POST /genOrder end to end.
Per-stage medians come from the stock service's Server-Timing header.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
import redis
from kazoo.client import KazooClient
from sqlalchemy import text

from inventory import stack
from inventory.cpu import snapshot
from inventory.servers import ServerProcess, start_redis, start_zookeeper
from shared.db import make_engine
from shared.timing import parse_server_timing


@dataclass
class BenchConfig:
    requests: int = 600  # per measured configuration
    concurrency: int = 32
    limit_seconds: float = 3.0  # per physical-limit measurement
    spread_goods: int = 100
    backends: tuple[str, ...] = ("zookeeper", "redis", "database", "none")
    scopes: tuple[str, ...] = ("sku", "global")

    @classmethod
    def quick(cls) -> BenchConfig:
        return cls(requests=150, concurrency=16, limit_seconds=1.0)

    @classmethod
    def smoke(cls) -> BenchConfig:
        return cls(
            requests=12,
            concurrency=4,
            limit_seconds=0.2,
            spread_goods=5,
            backends=("zookeeper", "none"),
        )


@dataclass
class Measure:
    name: str
    per_second: float
    p50_ms: float | None = None
    p99_ms: float | None = None
    stages_ms: dict[str, float] = field(default_factory=dict)  # medians from Server-Timing
    errors: int = 0
    cpu_ms: dict[str, float] = field(default_factory=dict)  # CPU per request, by process

    @property
    def cpu_ceiling(self) -> float | None:
        """Requests per second the machine's cores allow at this CPU cost per request."""
        total = sum(self.cpu_ms.values())
        return (os.cpu_count() or 1) * 1000 / total if total else None


@dataclass
class BenchReport:
    limits: list[Measure]
    reduce: list[Measure]
    gen_order: list[Measure]
    database: str
    notes: list[str] = field(default_factory=list)

    def find(self, name: str) -> Measure | None:
        return next((m for m in self.limits + self.reduce + self.gen_order if m.name == name), None)

    def ratios(self) -> dict[str, float]:
        out: dict[str, float] = {}
        raw = self.find("kazoo lock cycle")
        hot = self.find("reduceStock zookeeper/sku 1 goods")
        if raw and hot and raw.per_second:
            out["zookeeper hot goods / raw kazoo lock cycle"] = hot.per_second / raw.per_second
        for backend in ("zookeeper", "redis", "database"):
            sku = self.find(f"reduceStock {backend}/sku 100 goods")
            glob = self.find(f"reduceStock {backend}/global 100 goods")
            if sku and glob and glob.per_second:
                out[f"{backend}: 100 goods sku / global"] = sku.per_second / glob.per_second
        return out


def percentile_ms(values: list[float], p: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))
    return round(ordered[index] * 1000, 2)


def rate(fn: Any, seconds: float) -> float:
    """Sequential calls of fn for about `seconds`; calls per second."""
    fn()  # warm-up: connections, paths
    count, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        fn()
        count += 1
    return count / (time.perf_counter() - started)


def measure_limits(zk_hosts: str, redis_url: str, stock_db: str, seconds: float) -> list[Measure]:
    zk = KazooClient(hosts=zk_hosts)
    zk.start(timeout=10)
    lock = zk.Lock(f"/bench/limits/{uuid.uuid4().hex[:8]}")
    kazoo_rate = rate(lambda: (lock.acquire(), lock.release()), seconds)
    zk.stop()
    zk.close()

    client = redis.Redis.from_url(redis_url)
    rlock = client.lock(f"bench:limits:{uuid.uuid4().hex[:8]}", timeout=10)
    redis_rate = rate(lambda: (rlock.acquire(), rlock.release()), seconds)
    client.close()

    engine = make_engine(stock_db)
    goods = f"bench-hot-{uuid.uuid4().hex[:6]}"
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO stock (goods_id, num, seeded_num, seed_version, fence, "
                "updated_at) VALUES (:g, 0, 0, 1, 0, CURRENT_TIMESTAMP)"
            ),
            {"g": goods},
        )

    def hot_update() -> None:
        with engine.begin() as conn:
            conn.execute(text("UPDATE stock SET num = num + 1 WHERE goods_id = :g"), {"g": goods})

    db_rate = rate(hot_update, seconds)
    engine.dispose()
    return [
        Measure("kazoo lock cycle", kazoo_rate),
        Measure("redis-py lock cycle", redis_rate),
        Measure("hot-row update+commit", db_rate),
    ]


Send = Callable[[httpx.AsyncClient, int], Awaitable[httpx.Response]]


async def timed_requests(
    base_url: str, send: Send, requests: int, concurrency: int, ok: Callable[[httpx.Response], bool]
) -> tuple[Measure, list[httpx.Response]]:
    """`requests` calls of `send(client, i)`, `concurrency` at a time: rate, p50/p99, errors."""
    latencies: list[float] = []
    responses: list[httpx.Response] = []
    gate = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(base_url=base_url, timeout=120, limits=limits) as client:

        async def one(i: int) -> None:
            async with gate:
                t0 = time.perf_counter()
                responses.append(await send(client, i))
                latencies.append(time.perf_counter() - t0)

        started = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(requests)))
        elapsed = time.perf_counter() - started
    errors = sum(not ok(r) for r in responses)
    measure = Measure(
        "",
        requests / elapsed,
        percentile_ms(latencies, 50),
        percentile_ms(latencies, 99),
        errors=errors,
    )
    return measure, responses


async def reduce_load(
    state: stack.StackState, goods: list[str], requests: int, concurrency: int, seed: int
) -> Measure:
    flags = [f"bench-{uuid.uuid4().hex}" for _ in range(requests)]
    flag_store = redis.Redis.from_url(state.redis_url)
    pipe = flag_store.pipeline()
    for flag in flags:
        pipe.set(flag, "orderId", ex=600)
    pipe.execute()
    flag_store.close()
    rng = random.Random(seed)
    bodies = [[{"goodsId": rng.choice(goods), "goodsNum": 1}] for _ in flags]

    def send(client: httpx.AsyncClient, i: int) -> Awaitable[httpx.Response]:
        return client.put(f"/reduceStock/{flags[i]}", json=bodies[i])

    measure, responses = await timed_requests(
        state.stock_url,
        send,
        requests,
        concurrency,
        ok=lambda r: r.status_code == 200 and r.json()["outcome"] == "deducted",
    )
    stages: dict[str, list[float]] = {}
    for response in responses:
        for stage, ms in parse_server_timing(response.headers.get("server-timing", "")).items():
            stages.setdefault(stage, []).append(ms)
    measure.stages_ms = {k: round(statistics.median(v), 2) for k, v in stages.items()}
    return measure


async def order_load(
    state: stack.StackState, goods: list[str], requests: int, concurrency: int
) -> Measure:
    def send(client: httpx.AsyncClient, i: int) -> Awaitable[httpx.Response]:
        body = {"userId": f"bench-{i}", "goodsIds": [goods[i % len(goods)]]}
        return client.post("/genOrder", json=body)

    measure, _ = await timed_requests(
        state.order_url, send, requests, concurrency, ok=lambda r: r.status_code == 200
    )
    measure.name = "genOrder end to end (zookeeper/sku, 100 goods)"
    return measure


def seed_goods(state: stack.StackState, count: int, prefix: str) -> list[str]:
    goods = [f"{prefix}{i}" for i in range(count)]
    with httpx.Client(base_url=state.stock_url, timeout=30) as client:
        for g in goods:
            client.put(f"/stock/{g}", json={"num": 100_000_000}).raise_for_status()
    return goods


def run_bench(config: BenchConfig, env: dict[str, str], say: Any = print) -> BenchReport:
    """`env` may name ZK_HOSTS, REDIS_URL and the database URLs; what it does not name is
    started here (ZooKeeper with fsync on, as in the stack) or made as SQLite files."""
    home = Path(tempfile.mkdtemp(prefix="inventory-bench-"))
    own: list[ServerProcess] = []
    try:
        if not env.get("ZK_HOSTS"):
            own.append(start_zookeeper(home / "zookeeper"))
            env["ZK_HOSTS"] = own[-1].address
        if not env.get("REDIS_URL"):
            own.append(start_redis(home / "redis"))
            env["REDIS_URL"] = f"redis://{own[-1].address}/0"
        env.setdefault("ORDER_DATABASE_URL", f"sqlite:///{home / 'order.db'}")
        env.setdefault("STOCK_DATABASE_URL", f"sqlite:///{home / 'stock.db'}")
        import migrations

        migrations.upgrade(env["ORDER_DATABASE_URL"], "order")
        migrations.upgrade(env["STOCK_DATABASE_URL"], "stock")
        database = make_engine(env["STOCK_DATABASE_URL"]).url.get_backend_name()
        report = BenchReport([], [], [], database)

        say("measuring the limits of the parts ...")
        report.limits = measure_limits(
            env["ZK_HOSTS"], env["REDIS_URL"], env["STOCK_DATABASE_URL"], config.limit_seconds
        )
        for backend in config.backends:
            if backend == "database" and database == "sqlite":
                report.notes.append(
                    "database lock skipped: SQLite has no row locks (set "
                    "STOCK_DATABASE_URL to PostgreSQL or MySQL to include it)"
                )
                continue
            for scope in config.scopes:
                if backend == "none" and scope == "global":
                    continue  # no lock, no scope
                say(f"reduceStock with lock {backend}/{scope} ...")
                state = stack.up(
                    home=home / f"{backend}-{scope}",
                    extra_env={**env, "LOCK_BACKEND": backend, "LOCK_SCOPE": scope},
                    say=lambda *_: None,
                )
                try:
                    tag = f"{backend}-{scope}-{uuid.uuid4().hex[:4]}-"
                    pids = {**state.pids, **{p.name: p.pid for p in own}, "load": os.getpid()}
                    pids.pop("order_service", None)  # not on the reduceStock path
                    for goods_count in (1, config.spread_goods):
                        goods = seed_goods(state, goods_count, tag + f"{goods_count}-")
                        before = snapshot(pids, alone=frozenset({"load"}))
                        measure = asyncio.run(
                            reduce_load(
                                state, goods, config.requests, config.concurrency, seed=goods_count
                            )
                        )
                        after = snapshot(pids, alone=frozenset({"load"}))
                        measure.cpu_ms = {
                            name: round((after[name] - before[name]) * 1000 / config.requests, 2)
                            for name in pids
                        }
                        label = 100 if goods_count == config.spread_goods else goods_count
                        measure.name = f"reduceStock {backend}/{scope} {label} goods"
                        report.reduce.append(measure)
                    if backend == "zookeeper" and scope == "sku":
                        goods = seed_goods(state, config.spread_goods, tag + "orders-")
                        report.gen_order.append(
                            asyncio.run(
                                order_load(state, goods, config.requests, config.concurrency)
                            )
                        )
                finally:
                    stack.down(home=Path(state.home), say=lambda *_: None)
        return report
    finally:
        for server in own:
            server.stop()


def print_report(report: BenchReport, console: Any) -> None:
    from rich.table import Table

    raw = report.find("kazoo lock cycle")
    table = Table(
        "measure",
        "per s",
        "p50 ms",
        "p99 ms",
        "x kazoo",
        "CPU ms/req",
        "CPU ceiling/s",
        "errors",
        title=f"inventory bench (stock database: {report.database}, {os.cpu_count()} cores)",
    )
    for m in report.limits + report.reduce + report.gen_order:
        ratio = f"{m.per_second / raw.per_second:.2f}" if raw and raw.per_second else ""
        cpu = f"{sum(m.cpu_ms.values()):.1f}" if m.cpu_ms else ""
        ceiling = f"{m.cpu_ceiling:.0f}" if m.cpu_ceiling else ""
        table.add_row(
            m.name.replace("reduceStock ", "reduce "),
            f"{m.per_second:.0f}",
            _fmt(m.p50_ms),
            _fmt(m.p99_ms),
            ratio,
            cpu,
            ceiling,
            str(m.errors),
        )
    console.print(table)
    stages = Table(
        "reduceStock",
        "median stage ms (Server-Timing)",
        "CPU ms per request, by process",
        title="where the time goes",
    )
    for m in report.reduce:
        stages.add_row(
            m.name.replace("reduceStock ", ""),
            " ".join(f"{k} {v}" for k, v in m.stages_ms.items()),
            " ".join(f"{k} {v}" for k, v in m.cpu_ms.items()),
        )
    console.print(stages)
    targets = Table("ratio", "measured", "target", "", title="targets")
    for name, value in report.ratios().items():
        goal = 0.8 if "raw kazoo" in name else 3.0
        verdict = "[green]met" if value >= goal else "[red]missed"
        targets.add_row(name, f"{value:.2f}", f">= {goal}", verdict)
    console.print(targets)
    for note in report.notes:
        console.print(f"note: {note}")


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}"


def write_report(report: BenchReport, folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "bench.json"
    data.write_text(json.dumps({**asdict(report), "ratios": report.ratios()}, indent=2))
    chart = folder / "bench.png"
    draw_chart(report, chart)
    return data, chart


def draw_chart(report: BenchReport, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    measures = report.reduce + report.gen_order
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(measures) + 1.5))
    names = [m.name.replace("reduceStock ", "") for m in measures]
    ax.barh(names, [m.per_second for m in measures], color="tab:blue", label="measured")
    ceilings = [(n, m.cpu_ceiling) for n, m in zip(names, measures, strict=True) if m.cpu_ceiling]
    if ceilings:
        ax.scatter(
            [c for _, c in ceilings],
            [n for n, _ in ceilings],
            marker="|",
            s=300,
            color="black",
            label="CPU ceiling at its cost per request",
            zorder=3,
        )
    ax.set_xscale("log")
    colours = ("tab:red", "tab:purple", "tab:brown")
    for limit, colour in zip(report.limits, colours, strict=False):
        ax.axvline(
            limit.per_second,
            color=colour,
            linestyle="--",
            label=f"{limit.name}: {limit.per_second:.0f}/s",
        )
    ax.invert_yaxis()
    ax.set_xlabel("requests per second (log scale)")
    ax.set_title(
        f"PUT /reduceStock and POST /genOrder vs the limits of the parts ({report.database})"
    )
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
