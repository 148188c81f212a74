"""What one member of a batch costs each service against a lone order, by what the code is: py-spy
on every gunicorn worker of the order and the stock service during two genOrder loads on one hot
goods id of the same stack (the ZooKeeper stack with combining, as `inventory bench` runs it):
one caller (every batch of one, on both sides) and then the bench's callers (batches). Both
sides' batch sizes are read from the services' metrics around each load (batches.py).

    python -m inventory.bench.profile_members [--database-url URL] [--orders N] [--lone N]

Prints, per service, its CPU per order alone and as a member, the ratio, and each category's
share (profile_stacks.py) side by side, then the member's top functions. Needs py-spy and the
right to read other processes, as profile_order.py (whose sampling it uses) does. Writes the
raw stacks of each load and a summary.json to --out."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from inventory.bench.batches import BatchCounts, scrape_all
from inventory.bench.loads import order_load
from inventory.bench.profile_order import profile, py_spy, stack_env, warmed
from inventory.local import stack

LOADS = ("lone", "members")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", help="a PostgreSQL server (default: SQLite files)")
    parser.add_argument("--orders", type=int, default=3000, help="orders of the members' load")
    parser.add_argument("--lone", type=int, default=600, help="orders of the one caller's load")
    parser.add_argument("--concurrency", type=int, default=16, help="callers of the members")
    parser.add_argument("--rate", type=int, default=100, help="py-spy samples per second")
    parser.add_argument("--active", action="store_true", help="every active thread, not the GIL")
    parser.add_argument("--out", default="profile-members", help="folder of the results")
    args = parser.parse_args(argv)
    if py_spy() is None:
        print("py-spy not found: pip install py-spy", file=sys.stderr)
        return 2
    out = Path(args.out).resolve()
    with stack_env(args.database_url) as (env, database):
        loads = _profile_loads(out, env, args)
    summary = {"database": database, **loads}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(render(summary, args.concurrency))
    print(f"raw stacks and summary.json in {out}")
    return 0


def _profile_loads(out: Path, env: dict[str, str], args: argparse.Namespace) -> dict[str, Any]:
    """The stack up once, warmed, then the lone load and the members' load, each under py-spy
    with its batches counted from the services' metrics."""
    out.mkdir(parents=True, exist_ok=True)
    state = stack.up(home=out / "stack", extra_env=env, say=lambda *_: None)
    try:
        hot, workers, extra = warmed(state, args.concurrency)
        urls = {"order": state.order_url, "stock": state.stock_url}
        loads: dict[str, Any] = {}
        for name, callers, orders in zip(
            LOADS, (1, args.concurrency), (args.lone, args.orders), strict=True
        ):
            folder = out / name
            folder.mkdir(exist_ok=True)
            before = scrape_all(urls)

            def run(orders: int = orders, callers: int = callers) -> Any:
                return order_load(state.order_url, hot, orders, callers)

            summary = profile(workers, run, folder, args, extra)
            counts = BatchCounts()
            counts.add(before, scrape_all(urls))
            summary["callers"] = callers
            summary["orders_per_batch"] = counts.orders_per_batch
            summary["requests_per_hold"] = counts.requests_per_hold
            loads[name] = summary
        return loads
    finally:
        stack.down(home=out / "stack", say=lambda *_: None)


BATCH = {"order_service": ("orders_per_batch", "orders per batch"),
         "stock_service": ("requests_per_hold", "requests per lock hold")}  # fmt: skip


def render(summary: dict[str, Any], callers: int, n: int = 10) -> str:
    """Per service: its CPU per order alone and as a member, the ratio; by category, the ms per
    order of each (heaviest alone first); then the member's heaviest functions (self time)."""
    lone, members = summary["lone"], summary["members"]
    lines = [
        f"database: {summary['database']}; lone: {lone['orders']} orders at "
        f"{lone['per_second']}/s, 1 caller; members: {members['orders']} orders at "
        f"{members['per_second']}/s, {callers} callers; py-spy samples {lone['sampled']}"
    ]
    for service, (key, what) in BATCH.items():
        if service not in lone["services"] or service not in members["services"]:
            continue
        alone, member = lone["services"][service], members["services"][service]
        a_ms, m_ms = alone["cpu_ms_per_order"], member["cpu_ms_per_order"]
        lines.append(
            f"\n-- {service.replace('_', ' ')}: lone {a_ms:.2f} ms per order at "
            f"{_batch(lone[key])} {what}; member {m_ms:.2f} ms at {_batch(members[key])}: "
            f"member / lone {_ratio(m_ms, a_ms)}"
        )
        lines.append(f"  {'lone':>7} {'member':>7} {'m/l':>5}  category (ms of CPU per order)")
        lone_by, member_by = dict(alone["categories"]), dict(member["categories"])
        for category in sorted({*lone_by, *member_by}, key=lambda c: -lone_by.get(c, 0.0)):
            a, m = lone_by.get(category, 0.0), member_by.get(category, 0.0)
            lines.append(f"  {a:7.3f} {m:7.3f} {_ratio(m, a):>5}  {category}")
        lines.append(f"  a member's top {n} functions, self ms per order:")
        lines += [f"    {ms:7.3f}  {name}" for name, ms in member["self"][:n]]
    others = {
        k: (lone["other_processes_ms_per_order"].get(k), v)
        for k, v in members["other_processes_ms_per_order"].items()
    }
    if others:
        lines.append(
            "\nother processes, ms per order, lone / member: "
            + ", ".join(f"{k} {a or 0:.2f} / {m:.2f}" for k, (a, m) in others.items())
        )
    return "\n".join(lines)


def _batch(value: float | None) -> str:
    return f"{value:.1f}" if value is not None else "?"


def _ratio(member: float, lone: float) -> str:
    return f"{member / lone:.2f}" if lone else ""


if __name__ == "__main__":
    sys.exit(main())
