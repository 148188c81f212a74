"""The chaos run's stock keeper: an operator adjusting levels through the admin route while the
buyers buy and the faults happen, under the same lock and fence as the deductions it
is combined with:

- restock: units in (`delta` > 0), mostly on the hot and scarce goods, which sell out, so
  stock comes back after refusals (I9: a buyer told no stays told no) and I4 counts what came;
- damaged: a unit out (`delta` -1; 409 when the level is 0 already);
- count: a compare-and-swap against the level just read (`expected`, `num`): under load the
  level often moved in between, and the answer is 409 stale with the level now.

No adjustment is retried (a delta sent twice would count twice; that is what `expected` is
for): an unknown outcome stays unknown, and the check allows it at most one ledger entry. Each
carries a `reference` unique in the run, by which the check finds its entry: HA in
ledger_checks.py.
"""

from __future__ import annotations

import http.client
import json
import random
import threading
from dataclasses import dataclass, field
from typing import Any

from inventory.chaos.after_sale import Clock

THINK = 1.0  # seconds between two adjustments, on average
KINDS = (("restock", 0.5), ("damaged", 0.2), ("count", 0.3))


@dataclass
class Adjust:
    """One adjustment as the operator saw it."""

    reference: str
    goods_id: str
    reason: str
    body: dict[str, Any]
    invoke: float
    complete: float = 0.0
    status: int = 0  # 0: no answer
    delta: int | None = None  # the answered entry's delta (201)
    seq: int | None = None  # and its ledger seq
    level: int | None = None  # the level after (201), or now (409)
    error: str | None = None

    @property
    def known(self) -> bool:
        """A definite answer: made (201) or refused with nothing written (4xx)."""
        return 200 <= self.status < 500


@dataclass
class StockKeeper:
    host: str
    port: int
    admin: dict[str, str]  # the admin token's header
    prefix: str  # the run's goods ids; the references start with it too
    hot: list[str]  # goods ids restocked most (they sell out)
    others: list[str]
    clock: Clock
    seed: int = 1
    think: float = THINK
    timeout: float = 20.0
    ops: list[Adjust] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._keep, name="stock-keeper", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.timeout * 3)

    def _keep(self) -> None:
        rng = random.Random(self.seed * 7919)
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        n = 0
        while not self._stop.wait(self.think * rng.uniform(0.5, 1.5)):
            n += 1
            reason = rng.choices([k for k, _ in KINDS], [w for _, w in KINDS])[0]
            goods = rng.choice(self.hot if rng.random() < 0.6 else self.others)
            reference = f"{self.prefix}adj{n}"
            if reason == "restock":
                body: dict[str, Any] = {"delta": rng.randint(3, 12)}
            elif reason == "damaged":
                body = {"delta": -1}
            else:
                now = self._level(conn, goods)
                if now is None:
                    continue
                body = {"expected": now, "num": now + rng.choice((-1, 0, 1, 2))}
                body["num"] = max(body["num"], 0)
            body |= {"reason": reason, "reference": reference}
            self.ops.append(self._send(conn, Adjust(reference, goods, reason, body, 0.0)))

    def _level(self, conn: http.client.HTTPConnection, goods: str) -> int | None:
        status, answer = self._request(conn, "GET", f"/stock/{goods}", None)
        return int(answer["num"]) if status == 200 and "num" in answer else None

    def _send(self, conn: http.client.HTTPConnection, op: Adjust) -> Adjust:
        op.invoke = self.clock.now()
        path = f"/stock/{op.goods_id}/adjustments"
        op.status, answer = self._request(conn, "POST", path, op.body)
        op.complete = self.clock.now()
        entry = answer.get("entry") or {}
        op.delta, op.seq = entry.get("delta"), entry.get("seq")
        op.level = answer.get("num")
        op.error = answer.get("error")
        return op

    def _request(
        self, conn: http.client.HTTPConnection, method: str, path: str, body: Any
    ) -> tuple[int, dict[str, Any]]:
        return request(conn, method, path, body, self.admin)


def request(
    conn: http.client.HTTPConnection, method: str, path: str, body: Any, headers: dict[str, str]
) -> tuple[int, dict[str, Any]]:
    """One JSON request of an operator: (status, answer); 0 and the error when none came."""
    try:
        payload = None if body is None else json.dumps(body).encode()
        conn.request(
            method, path, body=payload, headers={"Content-Type": "application/json", **headers}
        )
        response = conn.getresponse()
        raw = response.read()
    except (http.client.HTTPException, OSError) as exc:
        conn.close()  # reconnects on the next request
        return 0, {"error": f"no answer: {type(exc).__name__}"}
    try:
        answer = json.loads(raw)
    except ValueError:
        answer = {"error": raw[:200].decode(errors="replace")}
    return response.status, answer if isinstance(answer, dict) else {}
