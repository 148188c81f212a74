"""The chaos run's buyers: threads sending POST /genOrder to haproxy from the root namespace.

Orders mix a few hot goods ids (demand far above supply: they sell out) with many others,
one to three lines each; some are submitted twice at once under one Idempotency-Key, and every
answer that is not definite is retried under the same key, as a careful client would. The
client is stdlib http.client, one connection per thread: it shares two cores with the cluster.
"""

from __future__ import annotations

import http.client
import json
import random
import threading
import time
from dataclasses import dataclass, field

from inventory.chaos.history import OK, UNKNOWN, Op, classify

RETRY_DELAYS = (0.5, 1.0, 2.0)  # after an unknown outcome, under the same Idempotency-Key


@dataclass
class Goods:
    prefix: str
    hot: dict[str, int]  # goods id -> initial level
    others: dict[str, int]

    @property
    def levels(self) -> dict[str, int]:
        return {**self.hot, **self.others}


def make_goods(
    prefix: str, hot: int = 3, hot_stock: int = 60, others: int = 200, other_stock: int = 200
) -> Goods:
    return Goods(
        prefix,
        {f"{prefix}hot{i}": hot_stock for i in range(hot)},
        {f"{prefix}g{i:03d}": other_stock for i in range(others)},
    )


@dataclass
class Workload:
    host: str
    port: int
    goods: Goods
    threads: int = 16
    hot_share: float = 0.3  # share of lines on a hot goods id
    double_share: float = 0.08  # share of orders submitted twice at once
    timeout: float = 40.0
    seed: int = 1
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
        hot, others = list(self.goods.hot), list(self.goods.others)
        lines: dict[str, int] = {}
        for _ in range(rng.choice((1, 1, 2, 3))):
            goods = rng.choice(hot) if rng.random() < self.hot_share else rng.choice(others)
            lines[goods] = rng.choice((1, 1, 2, 3))
        return lines

    def _buyer(self, n: int) -> None:
        rng = random.Random(self.seed * 1000 + n)
        conn = self._connect()
        i = 0
        while not self._stop.is_set():
            i += 1
            key = f"{self.goods.prefix}b{n}-{i}"
            lines = self._order(rng)
            with self._lock:
                self.orders += 1
            double = None
            if rng.random() < self.double_share:
                double = threading.Thread(target=self._double, args=(key, lines), daemon=True)
                double.start()
            self._until_known(conn, key, lines)
            if double is not None:
                double.join()

    def _double(self, key: str, lines: dict[str, int]) -> None:
        conn = self._connect()
        try:
            self._record(self._send(conn, key, lines, attempt=1, double=True))
        finally:
            conn.close()

    def _until_known(
        self, conn: http.client.HTTPConnection, key: str, lines: dict[str, int]
    ) -> None:
        for attempt in range(len(RETRY_DELAYS) + 1):
            op = self._send(conn, key, lines, attempt=attempt * 2, double=False)
            self._record(op)
            if op.outcome != UNKNOWN or op.order_status == "FAILED" or self._stop.is_set():
                return
            if attempt < len(RETRY_DELAYS):
                time.sleep(RETRY_DELAYS[attempt])

    def _connect(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)

    def _send(
        self,
        conn: http.client.HTTPConnection,
        key: str,
        lines: dict[str, int],
        attempt: int,
        double: bool,
    ) -> Op:
        items = [{"goodsId": g, "num": n} for g, n in lines.items()]
        body = json.dumps({"userId": key.split("-")[-2], "items": items}).encode()
        headers = {"Content-Type": "application/json", "Idempotency-Key": key}
        op = Op(key, attempt, double, lines, self.now(), 0.0)
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
