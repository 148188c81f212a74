"""The chaos run's buyers: threads sending POST /genOrder to haproxy from the root namespace.

Orders mix a few hot goods ids (demand far above supply: they sell out) with many others,
one to three lines each, and, a few, big orders beside them: 50 or 100 lines of goods ids of
64 characters (BIG below), so that a batch of the order service's holds small and big orders
at once, its reduceStock body is cut by bytes (ORDER_BATCH_BYTES), and the faults meet calls
of either size; some are submitted twice at once under one Idempotency-Key, and every
answer that is not definite is retried under the same key, as a careful client would. Some are
cancelled (half at once, racing their own genOrder, half once placed), some are holds (paid, or
left to expire for the cluster's reconcilers to cancel): inventory/chaos/after_sale.py. A few
(located_share) are of the goods kept in the run's three locations: naming no location or one,
all or nothing or fill=partial (locations.py); what each line filled is kept from their
answers, for H1. A few turns are a buyer's rush of a goods id with a per-buyer limit: several
orders of it at once, each under its own key, and sometimes a cancel after (buyer_limits.py,
for PB). The client is stdlib http.client, one connection per thread: it shares two
cores with the cluster.

A fault may come with a demand of its own (nemesis.Fault.demand): while `slow-first-attempts`
holds, every buyer orders the scarce goods instead (SCARCE below), whose few units keep
going out and coming back.
"""

from __future__ import annotations

import http.client
import json
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from inventory.chaos import after_sale, backorders, buyer_limits, locations, reservations
from inventory.chaos.history import OK, UNKNOWN, Op, classify
from order_service.core.statuses import BACKORDERED

RETRY_DELAYS = (0.5, 1.0, 2.0)  # after an unknown outcome, under the same Idempotency-Key
NORMAL, SCARCE = "normal", "scarce"  # what the buyers order: the run's mix, or the scarce goods
# While a fault asks for SCARCE demand: each order takes one unit of a scarce goods id (and,
# one time in two, a unit of another goods id too); each buyer waits about this long between
# two orders, so the few units that come back stay on the shelf for a while (about 8 orders a
# second over 3 ids, against about 12 units in and out of holds and cancels).
SCARCE_THINK = 0.7
# Big orders: this many lines, of goods ids this long (the longest the API takes), stocked so
# that they never sell out: what they test is the size of the calls, not the shortage.
BIG_LINES = (50, 100)
BIG_ID_LENGTH = 64


@dataclass
class Goods:
    prefix: str
    hot: dict[str, int]  # goods id -> initial level
    others: dict[str, int]
    # Ordered only under a fault's SCARCE demand: a few units each, sold out within a second of
    # it, then going out in holds and cancels and coming back (returns) while it holds.
    scarce: dict[str, int] = field(default_factory=dict)
    big: dict[str, int] = field(default_factory=dict)  # the big orders' goods ids (BIG_LINES)
    # Kept in the run's three locations (locations.py): goods id -> location -> seeded level
    located: dict[str, dict[str, int]] = field(default_factory=dict)
    # Sold beyond what is on hand, up to a limit (backorders.py), and held in carts
    # (reservations.py): goods id -> seeded level
    owed: dict[str, int] = field(default_factory=dict)
    reserved: dict[str, int] = field(default_factory=dict)
    # With a per-buyer limit, rushed by buyers (buyer_limits.py): goods id -> seeded level
    limited: dict[str, int] = field(default_factory=dict)

    @property
    def levels(self) -> dict[str, int]:
        """Each goods id's seeded level (a located one's: the total of its locations)."""
        totals = {g: sum(at.values()) for g, at in self.located.items()}
        mine = {**self.owed, **self.reserved, **self.limited}
        return {**self.hot, **self.others, **self.scarce, **self.big, **totals, **mine}


def make_goods(
    prefix: str,
    hot: int = 3,
    hot_stock: int = 60,
    others: int = 200,
    other_stock: int = 200,
    scarce: int = 3,
    scarce_stock: int = 9,
    big: int = max(BIG_LINES),
    big_stock: int = 10_000,
    located: int = locations.LOCATED,
    owed: int = backorders.OWED,
    reserved: int = reservations.RESERVED,
    limited: int = buyer_limits.LIMITED,
) -> Goods:
    return Goods(
        prefix,
        {f"{prefix}hot{i}": hot_stock for i in range(hot)},
        {f"{prefix}g{i:03d}": other_stock for i in range(others)},
        {f"{prefix}scarce{i}": scarce_stock for i in range(scarce)},
        {f"{prefix}big{i:03d}-".ljust(BIG_ID_LENGTH, "x"): big_stock for i in range(big)},
        locations.located_goods(prefix, located),
        backorders.owed_goods(prefix, owed),
        reservations.reserved_goods(prefix, reserved),
        buyer_limits.limited_goods(prefix, limited),
    )


@dataclass
class Workload:
    host: str
    port: int
    goods: Goods
    threads: int = 16
    hot_share: float = 0.3  # share of lines on a hot goods id
    double_share: float = 0.08  # share of orders submitted twice at once
    cancel_share: float = 0.08  # share of orders cancelled: half at once, half once placed
    hold_share: float = 0.1  # share of orders that are holds: two thirds paid, the rest expire
    big_share: float = 0.04  # share of orders that are big (BIG_LINES lines of long ids)
    located_share: float = 0.05  # share of orders of the located goods (locations.py)
    backorder_share: float = 0.04  # share of orders with fill=backorder (backorders.py)
    timeout: float = 40.0
    seed: int = 1
    demand: str = NORMAL  # set by the run while a fault with a demand of its own holds
    ops: list[Op] = field(default_factory=list)
    orders: int = 0
    started: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _threads: list[threading.Thread] = field(default_factory=list)

    def now(self) -> float:
        return time.monotonic() - self.started

    def start(self, started: float) -> None:
        self.started = started
        for n in range(self.threads):
            thread = threading.Thread(target=self._buyer, args=(n,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(self.timeout * 5)

    def _order(self, rng: random.Random) -> dict[str, int]:
        if self.goods.big and rng.random() < self.big_share:
            count = min(rng.choice(BIG_LINES), len(self.goods.big))
            return dict.fromkeys(rng.sample(list(self.goods.big), count), 1)
        hot, others = list(self.goods.hot), list(self.goods.others)
        lines: dict[str, int] = {}
        for _ in range(rng.choice((1, 1, 2, 3))):
            goods = rng.choice(hot) if rng.random() < self.hot_share else rng.choice(others)
            lines[goods] = rng.choice((1, 1, 2, 3))
        return lines

    def _scarce_order(self, rng: random.Random) -> dict[str, int]:
        lines = {rng.choice(list(self.goods.scarce)): 1}
        if rng.random() < 0.5:
            lines[rng.choice(list(self.goods.others))] = 1
        return lines

    def _buyer(self, n: int) -> None:
        rng = random.Random(self.seed * 1000 + n)
        conn = self._connect()
        holding: list[Op] = []  # its placed orders of the limited goods not cancelled yet
        i = 0
        while not self._stop.is_set():
            i += 1
            key = f"{self.goods.prefix}b{n}-{i}"
            scarce = self.demand == SCARCE and bool(self.goods.scarce)
            fill: str | None = None
            named: dict[str, str] = {}
            owing = False
            if not scarce and self.goods.limited and rng.random() < buyer_limits.RUSH_SHARE:
                self._rush(conn, rng, f"{self.goods.prefix}b{n}-{i}", holding)
                continue
            if scarce:
                lines = self._scarce_order(rng)
            elif self.goods.owed and rng.random() < self.backorder_share:
                lines, named = backorders.order(rng, list(self.goods.owed))
                fill, owing = "backorder", True
            elif self.goods.located and rng.random() < self.located_share:
                located, others = list(self.goods.located), list(self.goods.others)
                lines, fill, named = locations.located_order(rng, located, others)
            else:
                lines = self._order(rng)
            asked = {k: v for k, v in (("fill", fill), ("locations", named)) if v}
            with self._lock:
                self.orders += 1
            if scarce:
                intent = after_sale.scarce_intent(rng)
            elif owing:
                intent = backorders.intent(rng)
            else:
                intent = after_sale.intent(rng, self.cancel_share, self.hold_share)
            body = after_sale.order_body(key, lines, intent, fill, named)
            side = []
            if not scarce and rng.random() < self.double_share:
                args = (key, lines, body, intent, asked)
                side.append(threading.Thread(target=self._double, args=args))
            if intent == "cancel-at-once":
                side.append(threading.Thread(target=self._cancel_at_once, args=(key, lines)))
            for thread in side:
                thread.start()
            last = self._until_known(conn, key, lines, body, intent, asked)
            for thread in side:
                thread.join()
            if owing and last is not None and last.order_status != BACKORDERED:
                intent = "none"  # only a BACKORDERED one is cancelled
            if last is not None and last.outcome == OK and intent in ("cancel", "pay"):
                self._record(after_sale.act(conn, self, key, lines, intent, last.order_id))
            if scarce:
                self._stop.wait(SCARCE_THINK * rng.uniform(0.5, 1.5))

    def _rush(
        self, conn: http.client.HTTPConnection, rng: random.Random, stem: str, holding: list[Op]
    ) -> None:
        """A buyer's rush (buyer_limits.py): its orders sent at once, each on a connection of
        its own and under its own key (`<stem>r<j>`: the userId stays the buyer's), the first
        twice when asked; then, as often as CANCEL_SHARE, one of the buyer's placed orders of
        the limited goods (`holding`: of this rush or an earlier one) cancelled by its id, so
        that a later rush finds room under the limit again."""
        orders, double = buyer_limits.rush(rng, list(self.goods.limited))
        last: list[Op | None] = [None] * len(orders)
        sends = []
        for j, lines in enumerate(orders):
            key = f"{stem}r{j}"
            body = after_sale.order_body(key, lines, "none")
            sends.append(threading.Thread(target=self._rushed, args=(key, lines, body, last, j)))
            if j == 0 and double:
                sends.append(
                    threading.Thread(target=self._double, args=(key, lines, body, "none", {}))
                )
        with self._lock:
            self.orders += len(orders)
        for thread in sends:
            thread.start()
        for thread in sends:
            thread.join()
        holding += [op for op in last if op is not None and op.outcome == OK and op.order_id]
        if holding and rng.random() < buyer_limits.CANCEL_SHARE:
            chosen = holding.pop(rng.randrange(len(holding)))
            with self._lock:  # meant to be cancelled: H1 and H5 accept it CANCELLED
                for op in self.ops:
                    if op.key == chosen.key:
                        op.intent = "cancel"
            self._record(
                after_sale.act(conn, self, chosen.key, chosen.lines, "cancel", chosen.order_id)
            )

    def _rushed(
        self, key: str, lines: dict[str, int], body: bytes, last: list[Op | None], j: int
    ) -> None:
        conn = self._connect()
        try:
            last[j] = self._until_known(conn, key, lines, body, "none", {})
        finally:
            conn.close()

    def _double(
        self, key: str, lines: dict[str, int], body: bytes, intent: str, asked: dict[str, Any]
    ) -> None:
        conn = self._connect()
        try:
            op = self._send(conn, key, lines, body, attempt=1, double=True, asked=asked)
            op.intent = intent
            self._record(op)
        finally:
            conn.close()

    def _cancel_at_once(self, key: str, lines: dict[str, int]) -> None:
        conn = self._connect()
        try:
            op = after_sale.cancel_by_key(conn, self, key, lines)
            if op is not None:
                self._record(op)
        finally:
            conn.close()

    def _until_known(
        self,
        conn: http.client.HTTPConnection,
        key: str,
        lines: dict[str, int],
        body: bytes,
        intent: str,
        asked: dict[str, Any],
    ) -> Op | None:
        op = None
        for attempt in range(len(RETRY_DELAYS) + 1):
            op = self._send(conn, key, lines, body, attempt * 2, False, asked)
            op.intent = intent
            self._record(op)
            # Definite: placed, refused, or any 409 (FAILED, or cancelled: by a cancel that
            # raced it, or by key before it was placed, a tombstone); only the rest is retried.
            if op.outcome != UNKNOWN or op.status == 409 or op.order_status == "FAILED":
                return op
            if self._stop.is_set():
                return op
            if attempt < len(RETRY_DELAYS):
                time.sleep(RETRY_DELAYS[attempt])
        return op

    def _connect(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)

    def _send(
        self,
        conn: http.client.HTTPConnection,
        key: str,
        lines: dict[str, int],
        body: bytes,
        attempt: int,
        double: bool,
        asked: dict[str, Any] | None = None,
    ) -> Op:
        """One genOrder; `asked`: an order's fill and its lines' locations (kept in the op's
        `extra`, with the units each line filled when it is answered placed)."""
        headers = {"Content-Type": "application/json", "Idempotency-Key": key}
        op = Op(key, attempt, double, lines, self.now(), 0.0, extra=dict(asked or {}))
        try:
            conn.request("POST", "/genOrder", body=body, headers=headers)
            response = conn.getresponse()
            raw = response.read()
            op.status = response.status
            try:
                answer = json.loads(raw)
            except ValueError:
                answer = {"error": raw[:200].decode(errors="replace")}
            op.outcome, op.order_id, op.order_status, op.reason = classify(op.status, answer)
            if asked and op.outcome == OK and (filled := locations.filled_of(answer)):
                op.extra["filled"] = filled
        except (http.client.HTTPException, OSError) as exc:
            conn.close()  # reconnects on the next request
            op.reason = f"no answer: {type(exc).__name__}"
        op.complete = self.now()
        return op

    def _record(self, op: Op) -> None:
        with self._lock:
            self.ops.append(op)

    def confirmed(self) -> int:
        with self._lock:
            return sum(1 for op in self.ops if op.outcome == OK)
