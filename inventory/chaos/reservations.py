"""Cart reservations in a chaos run (docs/backorders.md): a buyer thread on the order service
holding units of a few goods ids of their own (RESERVED below, stocked so they never run out)
and ending each reservation one of the three ways, through every fault:

- POST /reservations (one or two lines, ttlSeconds TTL: short, so the ones left alone are
  expired by the elected reconciler during the run, whose passes run every RECONCILE_INTERVAL,
  2 s on the cluster), under an Idempotency-Key of its own, a quarter sent again under the
  same key once answered;
- then, at once: consumed (CONSUME share: POST /genOrder with its `reservationId` and its lines,
  under an Idempotency-Key, a quarter sent again under the same key once answered), released
  (RELEASE share: DELETE /reservations/{id}, a quarter sent again once answered), or left to
  expire;
- every request without an answer or answered 5xx sent again as it was (RETRIES times at most;
  a POST /reservations sent again under its key is the same reservation).
Every request is kept (Step) and judged: RA in backorder_checks.py (each answer holds against
the reservation's end), R1 (inventory/check/reservations.py: one end each, units conserved).
"""

from __future__ import annotations

import http.client
import random
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from inventory.chaos.after_sale import Clock
from inventory.chaos.restocks import request

RESERVED = 2  # goods ids of their own
STOCK = 5_000
TTL = 3  # seconds
CONSUME, RELEASE = 0.4, 0.3  # the rest are left to expire
THINK = 0.7
RETRIES = 3
RETRY_PAUSE = 0.5
USER = "chaos-cart"


def reserved_goods(prefix: str, count: int = RESERVED) -> dict[str, int]:
    return {f"{prefix}rsv{i}": STOCK for i in range(count)}


@dataclass
class Step:
    """One request of the reserver as it saw it."""

    reservation: str | None  # its id (None: a POST not answered with one)
    step: str  # reserve, consume, release
    invoke: float
    complete: float = 0.0
    status: int = 0  # 0: no answer
    state: str | None = None  # the reservation's state as answered (or the order's status)
    order_id: str | None = None
    repeat: bool = False
    retry: int = 0
    error: str | None = None
    key: str | None = None  # a POST /reservations' Idempotency-Key


@dataclass
class Reserver:
    host: str
    port: int
    goods: list[str]
    clock: Clock
    prefix: str = ""
    seed: int = 1
    timeout: float = 20.0
    steps: list[Step] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._reserve, name="reserver", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.timeout * (RETRIES + 2) * 2)

    def _reserve(self) -> None:
        rng = random.Random(self.seed * 32_452_843)
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        n = 0
        while self.goods and not self._stop.wait(THINK * rng.uniform(0.5, 1.5)):
            n += 1
            count = 1 if rng.random() < 0.7 else 2
            lines = {g: rng.randint(1, 3) for g in rng.sample(self.goods, count)}
            items = [{"goodsId": g, "num": k} for g, k in lines.items()]
            body = {"userId": USER, "items": items, "ttlSeconds": TTL}
            key = f"{self.prefix}k{n}"
            headers = {"Idempotency-Key": key}
            post = Step(None, "reserve", 0.0, key=key)
            made = self._step(conn, post, "POST", "/reservations", body, headers)
            if 0 < made.status < 500 and rng.random() < 0.25:
                again = Step(None, "reserve", 0.0, repeat=True, key=key)
                self._step(conn, again, "POST", "/reservations", body, headers)
            if made.status != 201 or not made.reservation:
                continue
            rid, roll = made.reservation, rng.random()
            if roll < CONSUME:
                order = {"userId": USER, "items": items, "reservationId": rid}
                keyed = {"Idempotency-Key": f"{self.prefix}r{n}"}
                step = Step(rid, "consume", 0.0)
                first = self._step(conn, step, "POST", "/genOrder", order, keyed)
                if 0 < first.status < 500 and rng.random() < 0.25:
                    again = Step(rid, "consume", 0.0, repeat=True)
                    self._step(conn, again, "POST", "/genOrder", order, keyed)
            elif roll < CONSUME + RELEASE:
                path = f"/reservations/{rid}"
                first = self._step(conn, Step(rid, "release", 0.0), "DELETE", path, None)
                if 0 < first.status < 500 and rng.random() < 0.25:
                    self._step(conn, Step(rid, "release", 0.0, repeat=True), "DELETE", path, None)

    def _step(
        self,
        conn: http.client.HTTPConnection,
        step: Step,
        method: str,
        path: str,
        body: Any,
        headers: dict[str, str] | None = None,
    ) -> Step:
        """The request, sent again while it has no answer or a 5xx; every attempt kept."""
        attempt = step
        for retry in range(RETRIES + 1):
            attempt = Step(**{**asdict(step), "retry": retry})
            attempt.invoke = self.clock.now()
            attempt.status, answer = request(conn, method, path, body, headers or {})
            attempt.complete = self.clock.now()
            attempt.reservation = step.reservation or answer.get("reservationId")
            attempt.state = answer.get("state") or answer.get("status")
            attempt.order_id = answer.get("orderId")
            attempt.error = answer.get("error") or answer.get("reason")
            self.steps.append(attempt)
            if 0 < attempt.status < 500 or self._stop.is_set():
                return attempt
            time.sleep(RETRY_PAUSE)
        return attempt


def started(goods: list[str], prefix: str, clock: Clock, seed: int) -> Reserver:
    """The reserver on the cluster's order service (through haproxy), started."""
    from inventory.cluster import topology

    reserver = Reserver(topology.VIP, topology.LB_ORDER_PORT, goods, clock, prefix, seed)
    reserver.start()
    return reserver
