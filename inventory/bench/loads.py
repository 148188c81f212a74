"""The bench's loads over HTTP, through the light client (inventory/load/http_load.py): PUT
/reduceStock with flags written to Redis first, as the order service would, and POST /genOrder
(to the order service, or to the one-database peer).
Everything is encoded before the clock starts and decoded after it stops."""

from __future__ import annotations

import json
import random
import statistics
import uuid
from dataclasses import dataclass
from typing import Any

import httpx
import redis

from inventory.load.http_load import Answer, Call, LoadRun, run_calls
from inventory.local import stack_state
from shared.timing import parse_server_timing


@dataclass
class LoadResult:
    run: LoadRun
    ok: int
    latencies: list[float]
    batch_sizes: list[int]
    stages: dict[str, list[float]]


def seed_goods(state: stack_state.StackState, count: int, prefix: str) -> list[str]:
    goods = [f"{prefix}{i}" for i in range(count)]
    with httpx.Client(base_url=state.stock_url, timeout=30, headers=state.admin_headers()) as c:
        for g in goods:
            c.put(f"/stock/{g}", json={"num": 100_000_000}).raise_for_status()
    return goods


def reduce_calls(redis_url: str, goods: list[str], requests: int, seed: int) -> list[Call]:
    """One flag per call, written to Redis first; each call buys one unit of a random goods."""
    flags = [f"bench-{uuid.uuid4().hex}" for _ in range(requests)]
    client = redis.Redis.from_url(redis_url)
    try:
        pipe = client.pipeline(transaction=False)
        for flag in flags:
            pipe.set(flag, "orderId", ex=600)
        pipe.execute()
    finally:
        client.close()
    rng = random.Random(seed)
    return [
        Call(
            "PUT",
            f"/reduceStock/{flag}",
            json.dumps([{"goodsId": rng.choice(goods), "goodsNum": 1}]).encode(),
        )
        for flag in flags
    ]


def reduce_load(state: stack_state.StackState, calls: list[Call], concurrency: int) -> LoadResult:
    run = run_calls(state.stock_url, calls, concurrency)
    ok, sizes = 0, []
    stages: dict[str, list[float]] = {}
    for answer in run.answers:
        body = _json(answer)
        if answer.status == 200 and body.get("outcome") == "deducted":
            ok += 1
            sizes.append(int(body.get("lock", {}).get("batchSize", 1)))
        for stage, ms in parse_server_timing(answer.server_timing).items():
            stages.setdefault(stage, []).append(ms)
    return LoadResult(run, ok, [a.seconds for a in run.answers], sizes, stages)


def order_load(url: str, goods: list[str], requests: int, concurrency: int) -> LoadResult:
    """POST /genOrder to the order service at `url` (or to the one-database peer: the same
    bodies), one unit of one goods id each, the goods taken in turn."""
    calls = [
        Call(
            "POST",
            "/genOrder",
            json.dumps({"userId": f"bench-{i}", "goodsIds": [goods[i % len(goods)]]}).encode(),
        )
        for i in range(requests)
    ]
    run = run_calls(url, calls, concurrency)
    ok = sum(a.status == 200 for a in run.answers)
    # The orders placed in each one's batch (the order service's Server-Timing `batch;desc=N`;
    # the peer sends none).
    sizes = [n for a in run.answers if a.status == 200 and (n := _batch(a.server_timing))]
    return LoadResult(run, ok, [a.seconds for a in run.answers], sizes, {})


def _batch(header: str) -> int:
    for part in header.split(","):
        name, _, rest = part.strip().partition(";desc=")
        if name == "batch" and rest.isdigit():
            return int(rest)
    return 0


def stage_medians(stages: dict[str, list[float]]) -> dict[str, float]:
    return {k: round(statistics.median(v), 2) for k, v in stages.items()}


def _json(answer: Answer) -> dict[str, Any]:
    try:
        value = json.loads(answer.body)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
