"""The flash sale's buyers and what their answers must make true (`inventory demo flash-sale`,
flash_sale.py): who clicks how often under which Idempotency-Keys (`plan`), the clicks sent,
a buyer's at once, one stdlib http.client connection each (`send_all`), and the facts (`facts`,
a pure function of the clicks' answers and the order database's rows at the end, with the goods
id's level and the lowest its ledger ever shows):

- exactly UNITS orders CONFIRMED, to as many distinct buyers (a limit of 1 each);
- no buyer with more units than the limit in orders that count (every status but FAILED and
  CANCELLED), and no Idempotency-Key that named two orders;
- every click answered with the order of its buyer (200: the buyer's one order; a key sent
  again answers what the key's first send did), a 409 limit_per_buyer (the order recorded
  FAILED with that reason, the answer's `had` at the limit: the buyer had no room), or, once
  the stock is gone, a 409 insufficient_stock (a refused order counts for no limit, so a
  buyer's other keys meet the empty shelf too); nothing else;
- the level 0 at the end, and never below 0 in the ledger.
"""

from __future__ import annotations

import http.client
import json
import random
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from inventory.check.buyers import LIMIT_PER_BUYER, BuyerOrder, over_the_limit

PLACED, LIMITED, SOLD_OUT, OTHER = "its order", LIMIT_PER_BUYER, "sold out", "other"


@dataclass
class Click:
    buyer: str
    key: str
    at_once: int  # the buyer's clicks sent together (1: a buyer who clicked once)
    status: int = 0  # 0: no answer
    order_id: str | None = None
    order_status: str | None = None
    reason: str | None = None
    replayed: bool = False  # Idempotent-Replayed: true
    had: int | None = None  # a limit's refusal: the units the buyer had already, it said
    seconds: float = 0.0


def plan(prefix: str, buyers: int, clickers: int, clicks: int, seed: int = 1) -> list[list[Click]]:
    """Each buyer's clicks, in the order the buyers come. A clicker sends `clicks` at once: one
    in two all under one key (a double click, five times), the others two under one key and
    each other under its own (a buyer who reloads and buys again). The clickers come among the
    first buyers, while there is stock to take: the limit, not the empty shelf, must stop them.
    """
    rng = random.Random(seed)
    names = [f"buyer{i:03d}" for i in range(buyers)]
    rng.shuffle(names)
    early = names[: min(buyers, clickers * 3)]
    chosen = set(rng.sample(early, min(clickers, len(early))))
    made: list[list[Click]] = []
    for n, name in enumerate(names):
        if name not in chosen:
            made.append([Click(name, f"{prefix}{name}-k0", 1)])
            continue
        keys = [0] * clicks if n % 2 else [0, 0, *range(1, clicks - 1)]
        made.append([Click(name, f"{prefix}{name}-k{k}", clicks) for k in keys])
    return made


def send_all(order_url: str, goods: str, buyers: Sequence[list[Click]], threads: int) -> float:
    """Every buyer's clicks, `threads` buyers at a time (a clicker's clicks on threads of their
    own, released together by a barrier); the seconds it took."""
    where = urlsplit(order_url)
    host, port = where.hostname or "127.0.0.1", where.port or 80
    started = time.perf_counter()

    def buyer(clicks: list[Click]) -> None:
        if len(clicks) == 1:
            send(host, port, goods, clicks[0])
            return
        gate = threading.Barrier(len(clicks))
        others = [
            threading.Thread(target=send, args=(host, port, goods, c, gate)) for c in clicks[1:]
        ]
        for thread in others:
            thread.start()
        send(host, port, goods, clicks[0], gate)
        for thread in others:
            thread.join()

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(buyer, buyers))
    return time.perf_counter() - started


def send(
    host: str, port: int, goods: str, click: Click, gate: threading.Barrier | None = None
) -> None:
    """One POST /genOrder of one unit, on a connection of its own; the answer kept in `click`."""
    body = json.dumps({"userId": click.buyer, "items": [{"goodsId": goods, "num": 1}]})
    headers = {"Content-Type": "application/json", "Idempotency-Key": click.key}
    conn = http.client.HTTPConnection(host, port, timeout=60)
    try:
        conn.connect()
        if gate is not None:
            gate.wait(30)
        started = time.perf_counter()
        conn.request("POST", "/genOrder", body=body, headers=headers)
        response = conn.getresponse()
        raw = response.read()
        click.seconds = time.perf_counter() - started
        click.status = response.status
        click.replayed = response.getheader("Idempotent-Replayed") == "true"
        answer: Any = json.loads(raw) if raw else {}
        if isinstance(answer, dict):
            click.order_id, click.order_status = answer.get("orderId"), answer.get("status")
            click.reason = answer.get("reason") or answer.get("error")
            click.had = answer.get("had") if isinstance(answer.get("had"), int) else None
    except (OSError, http.client.HTTPException, ValueError, threading.BrokenBarrierError) as exc:
        click.reason = f"no answer: {type(exc).__name__}"
    finally:
        conn.close()


def kind(click: Click, held: Mapping[str, str]) -> str:
    """What a click was answered: PLACED (200, its buyer's one order), LIMITED (409
    limit_per_buyer), SOLD_OUT (409 insufficient_stock), or OTHER. `held`: buyer -> the one
    order of theirs that ended CONFIRMED."""
    if click.status == 200 and click.order_status == "CONFIRMED":
        return PLACED if held.get(click.buyer) == click.order_id else OTHER
    if click.status == 409 and click.order_status == "FAILED":
        if (click.reason or "").startswith(LIMIT_PER_BUYER):
            return LIMITED
        if click.reason == "insufficient_stock":
            return SOLD_OUT
    return OTHER


def facts(
    buyers: Sequence[list[Click]],
    found: Mapping[str, BuyerOrder],
    goods: str,
    limit: int,
    level: int | None,
    lowest: int | None,
) -> dict[str, Any]:
    """The sale's facts (the module's doc), from the answers and the rows at the end."""
    clicks = [c for clicked in buyers for c in clicked]
    confirmed = [o for o in found.values() if o.status == "CONFIRMED" and o.lines.get(goods)]
    mine: dict[str, list[str]] = defaultdict(list)
    for order in confirmed:
        mine[order.user].append(order.order_id)
    held = {user: ids[0] for user, ids in mine.items() if len(ids) == 1}
    per_key: dict[str, set[str]] = defaultdict(set)
    for click in clicks:
        if click.order_id:
            per_key[click.key].add(click.order_id)
    answered = Counter(kind(c, held) for c in clicks)
    repeats = Counter(kind(c, held) for c in clicks if c.at_once > 1)
    refusals = {c.order_id or c.key for c in clicks if kind(c, held) == LIMITED}
    not_held = sorted(o for o in refusals if o not in found or not found[o].refused_by_the_limit)
    # A refusal of a buyer with room under the limit (it said it had less than the limit less
    # this order's unit), or that did not say what the buyer had.
    with_room = sorted(
        c.key for c in clicks if kind(c, held) == LIMITED and (c.had is None or c.had + 1 <= limit)
    )
    others = [f"{c.buyer} {c.key}: {c.status} {c.order_status} {c.reason}" for c in clicks]
    return {
        "buyers": len(buyers),
        "clickers": sum(1 for clicked in buyers if len(clicked) > 1),
        "clicks": len(clicks),
        "confirmed": len(confirmed),
        "confirmed_buyers": len(mine),
        "units_confirmed": sum(o.lines[goods] for o in confirmed),
        "over_limit": over_the_limit(list(found.values()), {goods: limit}),
        "keys_with_two_orders": sorted(k for k, ids in per_key.items() if len(ids) > 1),
        "answers": dict(answered),
        "repeat_answers": dict(repeats),
        "replayed": sum(1 for c in clicks if c.replayed),
        "refused_by_the_limit": len(refusals),
        "refusals_not_held": not_held,
        "refused_with_room": with_room,
        "others": [said for said, c in zip(others, clicks, strict=True) if kind(c, held) == OTHER],
        "level": level,
        "lowest": lowest,
    }


def sale_ok(said: Mapping[str, Any], units: int) -> bool:
    """The facts hold: `units` CONFIRMED to as many buyers, none over the limit, one order per
    key, every click answered as the module's doc says, the refusals held, stock 0 and never
    below."""
    return (
        said["confirmed"] == said["confirmed_buyers"] == said["units_confirmed"] == units
        and not said["over_limit"]
        and not said["keys_with_two_orders"]
        and not said["others"]
        and not said["refusals_not_held"]
        and not said["refused_with_room"]
        and said["level"] == 0
        and said["lowest"] is not None
        and said["lowest"] >= 0
    )
