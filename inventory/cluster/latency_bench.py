"""`inventory cluster bench-latency`: the flow against the one-database peer on the cluster,
with its PostgreSQL links delayed (delay_proxy.py; `cluster up --link-delay-ms`).

Both sides go through the same balancers (the order service's port, the peer's port: the peer
runs on both order hosts with as many threads as the order replicas, latency_peer.py) to the same
PostgreSQL (synchronous standby; every link to it and between its hosts delayed alike). For
each added delay (the proxies' delay moved between loads: a file and SIGHUP), each regime (one
hot goods id, 100 goods ids), each caller count and each round, the flow's POST /genOrder and
the peer's take the same light client in turn, the first of the two alternating from round to
round. Rates are the median of the rounds; p50/p99 pool every round's answers.

The parts each bound is made of, measured during the loads: the peer's row-lock hold (its own
threads, latency_peer.py); the flow's lock hold per batch and batch size (the stock replicas'
Prometheus histograms `lock_hold_seconds` and `deduct_batch_size`, read before and after each
load), and the order service's batch size (`order_batch_size`).
"""

from __future__ import annotations

import re
import secrets
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
from psycopg import sql

from inventory.bench.loads import order_load
from inventory.bench.peer import prepare
from inventory.cluster import balancers, delay_probe, deploy, pg_ha, tls, topology
from inventory.cluster.deploy import ClusterState
from inventory.cluster.health import ok
from inventory.cluster.latency_peer import read_holds
from inventory.cluster.nodes import Proc
from inventory.local.gunicorn import gunicorn_argv
from inventory.local.servers import wait_until

UNCONTENDED = 100  # orders placed by one caller, to time each side's hold on its own
PEER_URL = f"http://{topology.VIP}:{balancers.LB_PEER_PORT}"
STOCK = 1_000_000_000
HISTOGRAMS = ("lock_hold_seconds", "deduct_batch_size", "lock_wait_seconds", "order_batch_size")


@dataclass
class Load:
    """One load of one side: its rate, latencies, and the parts measured during it."""

    side: str  # flow | peer
    delay_ms: float
    goods: int
    callers: int
    round_no: int
    per_second: float
    ok: int
    errors: int
    latencies: list[float]
    parts: dict[str, float] = field(default_factory=dict)


def set_delay(state: ClusterState, delay_ms: float) -> None:
    """Every proxy's delay, read again from its file on SIGHUP."""
    import signal

    for proc in state.procs.values():
        if proc.name.startswith("delay-"):
            Path(proc.log).with_name("link-delay-ms").write_text(f"{delay_ms}\n")
            proc.signal(signal.SIGHUP)
    time.sleep(0.5)


def peer_database(state: ClusterState) -> str:
    """The peer's own role and database on the cluster's PostgreSQL (a password made now), as
    its SQLAlchemy URL through the balancers."""
    password = secrets.token_urlsafe(18)
    role = pg_ha.PEER_ROLE
    with psycopg.connect(pg_ha.libpq("postgres", state.secrets), autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
        conn.execute(
            sql.SQL(("ALTER" if exists else "CREATE") + " ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(role), sql.Literal(password)
            )
        )
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (role,)).fetchone():
            conn.execute(
                sql.SQL("CREATE DATABASE {} OWNER {}").format(
                    sql.Identifier(role), sql.Identifier(role)
                )
            )
    return (
        f"postgresql+psycopg://{role}:{password}@{topology.VIP}:{topology.LB_PG_PORT}/{role}"
        f"{tls.url_query(state.secrets.tls_ca)}"
    )


def start_peers(state: ClusterState, url: str, holds: Path, procs: list[Proc]) -> None:
    """The peer on each order host (added to `procs` as each starts, for the caller to stop)."""
    home = Path(state.home)
    holds.mkdir(parents=True, exist_ok=True)
    for host in topology.by_role("order"):
        argv = gunicorn_argv(
            "inventory.cluster.latency_peer",
            f"0.0.0.0:{balancers.PEER_PORT}",
            # The order replicas' threads per host (service_shape: one process of them), in
            # the stock replicas' processes: one process would bind the peer to its GIL,
            # where the order service's one process is what makes its batches bigger.
            state.workers,
            state.threads * 2,
        )
        env = {"PEER_DATABASE_URL": url, "PEER_HOLDS_DIR": str(holds)}
        proc = Proc(f"peer-{host.name}", host.name, argv, str(holds / f"{host.name}.log"), env)
        proc.start(home)
        procs.append(proc)
    wait_until(lambda: ok(f"{PEER_URL}/healthz"), 60, "the peer behind the balancers", interval=0.5)
    for host in topology.by_role("order"):
        address = f"http://{host.address}:{balancers.PEER_PORT}/healthz"
        wait_until(lambda a=address: ok(a), 60, f"the peer on {host.name}", interval=0.5)  # type: ignore[misc]


def settle(state: ClusterState) -> None:
    """Every replica and peer answers its health check, and a second more for the balancers
    to count it up again (2 checks 0.5 s apart): a load right after one whose orders queued
    the checks (128 callers) met the order replicas still marked down, 92 of 100 answers a
    balancer's 503."""
    deploy.wait_replicas_healthy(state)
    for host in topology.by_role("order"):
        address = f"http://{host.address}:{balancers.PEER_PORT}/healthz"
        wait_until(lambda a=address: ok(a), 60, f"the peer on {host.name}", interval=0.25)  # type: ignore[misc]
    time.sleep(1.0)


def seed(state: ClusterState, goods: list[str], peer_url: str) -> None:
    with httpx.Client(timeout=30, headers=state.admin_headers()) as client:
        for g in goods:
            client.put(f"{topology.STOCK_URL}/stock/{g}", json={"num": STOCK}).raise_for_status()
    prepare(peer_url, dict.fromkeys(goods, STOCK))


_SAMPLE = re.compile(r"^(\w+?)_(sum|count)(?:\{[^}]*\})? ([0-9.eE+-]+)$", re.M)


def scrape() -> dict[str, float]:
    """The histograms' sums and counts, added over the stock and order replicas."""
    totals: dict[str, float] = {}
    for host in topology.by_role("stock") + topology.by_role("order"):
        text = httpx.get(f"http://{host.address}:{topology.SERVICE_PORT}/metrics", timeout=5).text
        for name, kind, value in _SAMPLE.findall(text):
            if name in HISTOGRAMS:
                totals[f"{name}_{kind}"] = totals.get(f"{name}_{kind}", 0.0) + float(value)
    return totals


def _per(after: dict[str, float], before: dict[str, float], name: str, scale: float) -> float:
    count = after.get(f"{name}_count", 0) - before.get(f"{name}_count", 0)
    total = after.get(f"{name}_sum", 0) - before.get(f"{name}_sum", 0)
    return total / count * scale if count else 0.0


def one_load(
    side: str, goods: list[str], orders: int, callers: int
) -> tuple[Any, dict[str, float]]:
    """One side's load, and the parts its bound is made of, measured around it."""
    url = f"http://{topology.VIP}:{topology.LB_ORDER_PORT}" if side == "flow" else PEER_URL
    before, start = scrape() if side == "flow" else {}, time.time()
    result = order_load(url, goods, orders, callers)
    parts: dict[str, float] = {}
    if side == "flow":
        after = scrape()
        parts = {
            "lock_hold_ms": _per(after, before, "lock_hold_seconds", 1000),
            "lock_wait_ms": _per(after, before, "lock_wait_seconds", 1000),
            "batch": _per(after, before, "deduct_batch_size", 1),
            "order_batch": _per(after, before, "order_batch_size", 1),
        }
    return result, parts | {"start": start, "end": time.time()}


def bench(
    state: ClusterState,
    delays: list[float],
    callers: list[int],
    rounds: int,
    orders: int,
    say: Any = print,
) -> dict[str, Any]:
    holds = Path(state.home, "latency-peer")
    report: dict[str, Any] = {"delays_ms": delays, "callers": callers, "rounds": rounds}
    say("the proxy's own round trip and CPU, on loopback ...")
    report["proxy"] = [delay_probe.probe(d, 2000) for d in sorted({0.0, *delays})]
    url = peer_database(state)
    peers: list[Proc] = []
    try:
        start_peers(state, url, holds, peers)
        regimes = {1: ["lat-hot"], 100: [f"lat-g{i}" for i in range(100)]}
        seed(state, [g for goods in regimes.values() for g in goods], url)
        for side in ("flow", "peer"):  # warm both (connection pools, ZooKeeper's paths)
            for goods in regimes.values():
                one_load(side, goods, 300, 16)
        loads: list[Load] = []
        alone: list[Load] = []
        for delay in delays:
            set_delay(state, delay)
            # One caller: each hold on its own, no queue and little CPU contention, so its
            # growth with the added round trip counts the round trips it waits for.
            for side in ("flow", "peer"):
                settle(state)
                alone.append(_measured(side, delay, regimes[1], UNCONTENDED, 1, 0, holds))
                say("alone: " + _line(alone[-1]))
            for goods in regimes.values():
                for n in callers:
                    many = max(orders, 4 * n)  # every caller places a few
                    for r in range(rounds):
                        sides = ("flow", "peer") if r % 2 == 0 else ("peer", "flow")
                        for side in sides:
                            settle(state)
                            loads.append(_measured(side, delay, goods, many, n, r, holds))
                            say(_line(loads[-1]))
        report["loads"] = [vars(x) | {"latencies": None} for x in loads]
        report["summary"] = summarise(loads)
        report["alone"] = summarise(alone)
    finally:
        for proc in peers:
            proc.signal(15)
    return report


def _measured(
    side: str, delay: float, goods: list[str], orders: int, n: int, r: int, holds: Path
) -> Load:
    result, parts = one_load(side, goods, orders, n)
    if side == "peer":
        held, updates = read_holds(holds, parts["start"], parts["end"])
        if held:
            parts |= {
                "row_hold_ms": statistics.mean(held) * 1000,
                "row_hold_p50_ms": statistics.median(held) * 1000,
                "update_ms": statistics.mean(updates) * 1000,
            }
    answers = result.run.answers
    errors = sum(a.status != 200 for a in answers)
    # Orders confirmed a second: an error (a 503 from a balancer that found no replica
    # healthy, its health check queued behind the orders) is not a sale.
    rate = result.ok / result.run.elapsed if result.run.elapsed else 0.0
    # Latencies of the orders confirmed: a balancer's instant 503 is no order's latency.
    latencies = [a.seconds for a in answers if a.status == 200]
    return Load(side, delay, len(goods), n, r, rate, result.ok, errors, latencies, parts)


def _line(x: Load) -> str:
    parts = " ".join(f"{k} {v:.2f}" for k, v in x.parts.items() if k not in ("start", "end"))
    return (
        f"{x.delay_ms} ms, {x.goods} goods, {x.callers} callers, round {x.round_no + 1}: "
        f"{x.side} {x.per_second:.0f}/s ({x.errors} errors) {parts}"
    )


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else 0.0


def summarise(loads: list[Load]) -> list[dict[str, Any]]:
    """Per (delay, goods, callers, side): the median rate of the rounds, pooled p50/p99, the
    parts' means; and the flow/peer ratio."""
    rows: list[dict[str, Any]] = []
    keys = sorted({(x.delay_ms, x.goods, x.callers) for x in loads})
    for delay, goods, n in keys:
        row: dict[str, Any] = {"delay_ms": delay, "goods": goods, "callers": n}
        for side in ("flow", "peer"):
            mine = [x for x in loads if (x.delay_ms, x.goods, x.callers, x.side) == (
                delay, goods, n, side)]  # fmt: skip
            pooled = [s for x in mine for s in x.latencies]
            parts = {
                k: statistics.mean(x.parts[k] for x in mine if k in x.parts)
                for k in {k for x in mine for k in x.parts if k not in ("start", "end")}
            }
            row[side] = {
                "per_second": statistics.median(x.per_second for x in mine),
                "p50_ms": _pct(pooled, 0.5),
                "p99_ms": _pct(pooled, 0.99),
                "errors": sum(x.errors for x in mine),
                "answers": sum(x.ok + x.errors for x in mine),
                **parts,
            }
        row["ratio"] = row["flow"]["per_second"] / max(row["peer"]["per_second"], 1e-9)
        rows.append(row)
    return rows
