"""How `inventory bench --auth` shows what its pairs' table does not: the client's CPU per
operation on each side of every pair, and the Sentinel failover timed (auth_failover.py).
Tables that fit 80 columns."""

from __future__ import annotations

from typing import Any

from inventory.bench.auth_failover import OWN, SHARED, Failover
from inventory.bench.auth_pair import Pair


def cpu_table(pairs: list[Pair]) -> Any:
    from rich.table import Table

    table = Table(
        "part",
        "operation (without vs with)",
        "without µs",
        "with µs",
        "ratio",
        title="the client's CPU per operation (the bench process, every thread)",
        caption="the Redis TLS context row: without = a context per connection (redis-py's), "
        "with = one per process (shared/redis_tls.py)",
    )
    for p in pairs:
        if p.open_cpu_us is None or p.auth_cpu_us is None:
            continue
        ratio = p.auth_cpu_us / p.open_cpu_us if p.open_cpu_us else 0.0
        cpu = (f"{p.open_cpu_us:,.0f}", f"{p.auth_cpu_us:,.0f}")
        table.add_row(p.part, p.what, *cpu, f"{ratio:.2f}")
    return table


def failover_rows(results: list[Failover]) -> list[tuple[str, list[str]]]:
    """(what, one figure per result): the timings in s, the CPU in ms."""

    def fmt(value: float | None, unit: str) -> str:
        if value is None:
            return "not back"
        return f"{value:.2f} s" if unit == "s" else f"{value:,.1f} ms"

    def after_switch(f: Failover) -> float | None:
        return None if f.all_s is None or f.promoted_s is None else f.all_s - f.promoted_s

    rows: list[tuple[str, Any]] = [
        ("sentinels switch to the replica (+switch-master)", lambda f: fmt(f.promoted_s, "s")),
        ("first command succeeds again", lambda f: fmt(f.first_s, "s")),
        ("every thread's command succeeds again", lambda f: fmt(f.all_s, "s")),
        ("  of which after the switch", lambda f: fmt(after_switch(f), "s")),
        ("client CPU, switch -> every thread back", lambda f: fmt(f.burst_cpu_ms, "ms")),
        ("client CPU, kill -> every thread back", lambda f: fmt(f.cpu_ms, "ms")),
        ("a thread's first SET+DEL back (mean CPU)", lambda f: fmt(f.first_command_cpu_ms, "ms")),
        ("pool connections before the kill", lambda f: str(f.connections)),
        ("failed commands while waiting", lambda f: str(f.failures)),
    ]
    return [(name, [figure(f) for f in results]) for name, figure in rows]


def failover_table(results: list[Failover]) -> Any:
    from rich.table import Table

    heads = {OWN: "context per connection", SHARED: "one shared context"}
    threads = results[0].threads if results else 0
    table = Table(
        "after SIGKILL of the primary",
        *(heads.get(f.context, f.context) for f in results),
        title=f"Redis Sentinel failover, TLS: a pool of {threads} threads reconnecting "
        "(make_redis, rediss+sentinel://)",
        caption="a context per connection: redis-py's own SSL connection class (before "
        "shared/redis_tls.py); times from the kill",
    )
    for name, figures in failover_rows(results):
        table.add_row(name, *figures)
    return table
