"""What py-spy's samples of a genOrder load say, in ms of CPU per order: by function (self and
total), by category of code (PROFILE categories below: the framework, JSON, logging, metrics,
SQLAlchemy, the driver, the stock service's HTTP client, redis-py, the lock, combining...) and
by the step of the project's own code a sample belongs to. Used by profile_order.py."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

# (category, prefixes of the file py-spy names): the first that matches a frame's file wins.
CATEGORIES = [
    ("lock (kazoo/ZooKeeper)", ("kazoo/", "coordination/locks/")),
    ("combining", ("coordination/combining", "stock_service/core/")),
    ("metrics (prometheus_client)", ("prometheus_client/", "shared/metrics")),
    ("logging", ("logging/", "pythonjsonlogger/", "shared/logs", "shared/web/request_id")),
    ("JSON", ("json/", "orjson")),
    (
        "request handling and validation (Flask, apiflask, pydantic)",
        (
            "flask/",
            "werkzeug/",
            "apiflask/",
            "pydantic",
            "webargs/",
            "marshmallow/",
            "jinja2/",
            "flask_",
            "shared/web/api_app",
            "shared/web/json_only",
            "shared/web/http_errors",
            "shared/web/schemas",
            "shared/timing",
        ),
    ),
    ("SQLAlchemy (statements, pool)", ("sqlalchemy/",)),
    ("psycopg / DB driver", ("psycopg", "sqlite3/", "pymysql/")),
    ("httpx client of the stock service", ("httpx/", "httpcore/", "h11/", "anyio/", "ssl")),
    ("redis-py", ("redis/",)),
    ("gunicorn (accept, parse, respond)", ("gunicorn/",)),
    (
        "threads, sockets, selectors",
        (
            "threading",
            "queue",
            "selectors",
            "socket",
            "concurrent/",
            "contextlib",
        ),
    ),
    ("order service code", ("order_service/",)),
    ("stock service code", ("stock_service/",)),
    ("shared code", ("shared/",)),
    ("the peer's code", ("inventory/bench/peer/",)),
]


def category(frame: str) -> str:
    file = frame.rsplit(" (", 1)[-1].rstrip(")").rsplit(":", 1)[0]
    for name, prefixes in CATEGORIES:
        if any(file.startswith(p) or f"/{p}" in file for p in prefixes):
            return name
    return "other (stdlib, interpreter)"


def function(frame: str) -> str:
    """`name (file)`, the line number dropped: one entry per function."""
    name, _, where = frame.rpartition(" (")
    return f"{name} ({where.rstrip(')').rsplit(':', 1)[0]})"


def read_stacks(path: Path) -> Counter[tuple[str, ...]]:
    stacks: Counter[tuple[str, ...]] = Counter()
    for line in path.read_text(errors="replace").splitlines():
        stack_text, _, count = line.rpartition(" ")
        if stack_text and count.isdigit():
            stacks[tuple(stack_text.split(";"))] += int(count)
    return stacks


KERNEL = "kernel: system calls (sockets, polls, futexes), GIL released"
PROJECT = ("order_service/", "stock_service/", "shared/", "inventory/bench/peer/")
PLUMBING = ("threads, sockets, selectors", "other (stdlib, interpreter)")


def _file(frame: str) -> str:
    return frame.rsplit(" (", 1)[-1].rstrip(")").rsplit(":", 1)[0]


Weights = dict[str, defaultdict[str, float]]


def weigh(stacks: Counter[tuple[str, ...]], ms_per_order: float) -> Weights:
    """ms of CPU per order: by function (self: the leaf; total: anywhere on the stack), by
    category of the leaf, and by the innermost function of the project's own code on the
    stack (the step of the order it belongs to; "(no project frame)": the server and the
    framework around the view)."""
    per_sample = ms_per_order / (sum(stacks.values()) or 1)
    out: Weights = {k: defaultdict(float) for k in ("self", "total", "categories", "project step")}
    for frames, count in stacks.items():
        ms = count * per_sample
        out["self"][function(frames[-1])] += ms
        out["categories"][category(frames[-1])] += ms
        for name in {function(f) for f in frames if category(f) not in PLUMBING}:
            out["total"][name] += ms
        step = next(
            (function(f) for f in reversed(frames) if _file(f).startswith(PROJECT)),
            "(no project frame)",
        )
        out["project step"][step] += ms
    return out


def top(weights: Weights, cpu_ms: float, n: int = 20) -> dict[str, Any]:
    """The `n` heaviest of each kind (every category), in ms per order."""
    out: dict[str, Any] = {"cpu_ms_per_order": round(cpu_ms, 3)}
    for kind, values in weights.items():
        ranked = sorted(values.items(), key=lambda kv: -kv[1])
        out[kind] = [(k, round(v, 3)) for k, v in ranked[: None if kind == "categories" else n]]
    return out


def render(summary: dict[str, Any]) -> str:
    """The summary as text: per load, each service's ms of CPU per order by category, then its
    top functions by self and by total time and the project steps they belong to."""
    lines = [f"database: {summary['database']}"]
    for load in ("genOrder", "peer"):
        if load not in summary:
            continue
        s = summary[load]
        lines.append(
            f"\n== {load}: {s['orders']} orders at {s['per_second']}/s, {s['errors']} errors; "
            f"py-spy samples ({s['sampled']}) {s['samples']}"
        )
        others = {**s.get("other_processes_ms_per_order", {}), **s.get("postgres_ms_per_order", {})}
        if others:
            lines.append("other processes, ms per order: " + ", ".join(
                f"{k} {v:.2f}" for k, v in others.items()
            ))  # fmt: skip
        for service, t in s["services"].items():
            lines.append(f"\n-- {service}: {t['cpu_ms_per_order']:.2f} ms CPU per order")
            for kind in ("categories", "self", "total", "project step"):
                lines.append(f"  {kind}:")
                lines += [f"    {ms:7.3f}  {name}" for name, ms in t[kind]]
    return "\n".join(lines)
