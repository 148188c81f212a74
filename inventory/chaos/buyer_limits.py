"""Per-buyer limits in a chaos run (docs/http-api.md, PUT /buyer-limits/{goodsId}): a few goods
ids (LIMITED below) that one buyer may have at most LIMIT units of, in orders not FAILED or
CANCELLED, and buyers who rush them: RUSH orders of one of them sent at once, each under its
own Idempotency-Key (one in four rushes sends its first order twice, under one key), so that
the order service must count a buyer's units while that buyer's other orders are being
created beside it, through every fault.

- set up before the load: each goods id seeded at SEED units, never sold out (what the run
  tests is the limit, not the shortage), then its limit, on the order service (the admin
  token). The run never changes a limit after that;
- the rushes (workload.py): a small share of a buyer's turns (RUSH_SHARE); the buyer is the
  userId the workload's keys give (`b<thread>`); each order one or two units. After a rush, as
  often as CANCEL_SHARE, one of the buyer's placed orders of the limited goods (of this rush or
  an earlier one) is cancelled by its id, which frees its units for a later rush: the limit
  counts what a buyer has, not what it ever had;
- a 409 `limit_per_buyer` is a definite refusal (history.classify: `fail`), never retried.

PB, checked after the settlement (a pure function, `limits_hold`, over the history and the
order database's final rows, read by inventory/check/buyers.py): no buyer above a goods id's
limit in the orders that count at the end (every status but FAILED and CANCELLED; a line's
units as ordered: the rushes are all or nothing, so nothing is partly filled), and every
order answered 409 `limit_per_buyer` ends FAILED with that reason (never placed after).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import httpx
from sqlalchemy import Engine

from inventory.chaos.history import Op
from inventory.chaos.verdict import UNKNOWN, Verdict, violated_if
from inventory.check.buyers import (
    LIMIT_PER_BUYER,
    BuyerOrder,
    held_units,
    over_the_limit,
    read_buyer_orders,
)

LIMITED = 2  # goods ids with a per-buyer limit
SEED = 5000  # each one's level: never sold out in a run
LIMIT = 2  # units of one of them a buyer may have at once
RUSH = 4  # orders a rush sends at once, each under its own key
RUSH_SHARE = 0.02  # of a buyer's turns, a rush
DOUBLE_SHARE = 0.25  # of the rushes, the first order sent twice at once under one key
CANCEL_SHARE = 0.6  # of the rushes, one of the buyer's placed orders cancelled after it


def limited_goods(prefix: str, count: int = LIMITED) -> dict[str, int]:
    """goods id -> its seeded level."""
    return {f"{prefix}lim{i}": SEED for i in range(count)}


def limits_of(goods: Mapping[str, int]) -> dict[str, int]:
    """goods id -> the units a buyer may have of it (the run sets LIMIT on every one)."""
    return dict.fromkeys(goods, LIMIT)


def set_up(client: httpx.Client, goods: Mapping[str, int]) -> None:
    """Each goods id's limit, on the order service (`client`: its base URL, the admin token;
    the goods are seeded already, with the run's other goods)."""
    for goods_id in goods:
        answer = client.put(f"/buyer-limits/{goods_id}", json={"perBuyer": LIMIT})
        answer.raise_for_status()


def rush(rng: random.Random, goods: Sequence[str]) -> tuple[list[dict[str, int]], bool]:
    """One rush's orders (RUSH of them, one goods id, one or two units each), and whether its
    first is sent twice at once."""
    goods_id = rng.choice(list(goods))
    return [{goods_id: rng.choice((1, 1, 2))} for _ in range(RUSH)], rng.random() < DOUBLE_SHARE


def refused_by_the_limit(op: Op) -> bool:
    return op.kind == "order" and op.status == 409 and _limit_reason(op.reason)


def _limit_reason(reason: str | None) -> bool:
    return (reason or "").startswith(LIMIT_PER_BUYER)


def limits_hold(
    ops: Sequence[Op], found: Mapping[str, BuyerOrder], limits: Mapping[str, int]
) -> Verdict:
    """PB (see the module's doc). `found`: order id -> the order at the end, for every order of
    the limited goods and every order an answer named; `limits`: goods id -> perBuyer."""
    orders = list(found.values())
    over = over_the_limit(orders, dict(limits))
    bad = [
        f"{who}: {units} units in orders that count, limit {limits[who.split('/', 1)[0]]}"
        for who, units in over.items()
    ]
    refused = {op.order_id or op.key: op for op in ops if refused_by_the_limit(op)}
    for order_id, op in sorted(refused.items()):
        end = found.get(order_id)
        if end is None or not end.refused_by_the_limit:
            said = f"{end.status} {end.reason}" if end is not None else "missing"
            bad.append(f"{order_id}: answered 409 {LIMIT_PER_BUYER} (key {op.key}), ends {said}")
    holders = {
        f"{g}/{user}": units for g in limits for user, units in held_units(orders, g).items()
    }
    at_limit = sum(1 for units in holders.values() if units >= min(limits.values(), default=0))
    cancelled = sum(1 for o in orders if o.status == "CANCELLED" and set(o.lines) & set(limits))
    return Verdict(
        "PB",
        "no buyer over a goods id's limit, every limit_per_buyer refusal held",
        violated_if(bad),
        f"{len(limits)} goods ids limited to {sorted(set(limits.values()))} units a buyer; "
        f"{len(holders)} buyer-goods pairs holding units at the end ({at_limit} at the limit, "
        f"the most {max(holders.values(), default=0)}); {len(refused)} orders refused by the "
        f"limit; {cancelled} orders of them cancelled; {len(bad)} over the limit or not held",
        bad[:20],
    )


def judge(order_engine: Engine, ops: Sequence[Op], goods: Mapping[str, int]) -> list[Verdict]:
    """PB on the run's limited goods (none: no verdict)."""
    if not goods:
        return []
    try:
        named = [op.order_id for op in ops if op.order_id and refused_by_the_limit(op)]
        found = read_buyer_orders(order_engine, list(goods), named)
    except Exception as exc:
        return [Verdict("PB", "buyer limits", UNKNOWN, f"{type(exc).__name__}: {exc}")]
    return [limits_hold(ops, found, limits_of(goods))]


def figures(ops: Sequence[Op], goods: Mapping[str, int]) -> dict[str, Any]:
    """The report's figures: the rushes' orders, placed, refused by the limit, cancelled."""
    mine = [op for op in ops if set(op.lines) & set(goods)]
    keys = {op.key for op in mine if op.kind == "order"}
    return {
        "orders": len(keys),
        "placed": len({op.key for op in mine if op.kind == "order" and op.outcome == "ok"}),
        "refused_limit": len({op.key for op in mine if refused_by_the_limit(op)}),
        "cancels": sum(1 for op in mine if op.kind == "cancel"),
    }
