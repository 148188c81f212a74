"""The chaos run's mover: an operator moving the located goods between the run's locations
(locations.py) through the admin routes while the buyers buy and the faults happen, and
restocking them when they run low:

- send: POST /transfers (units out of the fullest location, to another, in transit from
  then), with a reference unique in the run; a quarter sent again with the same reference and
  body once answered (a repeat: 200, the same transfer, nothing moved again);
- receive or cancel (seven in ten received): POST /transfers/{id}/receive|cancel; a quarter
  sent again once answered (200, as it is), one in ten followed by the other step (409: the
  transfer took the first way);
- every step without an answer, or answered 5xx, sent again as it was (the same reference,
  the same step), up to RETRIES times: whatever the retries, each leg moves once (L3);
- restock: when a located goods id's locations hold fewer than LOW units in all, an
  adjustment at one of them (its `location`), recorded with the stock keeper's adjustments
  and judged with them (HA).
Every request is kept (Move, or the keeper's Adjust) and judged after the settlement: LT in
location_checks.py, L1-L5 against the ledger.
"""

from __future__ import annotations

import http.client
import random
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from inventory.chaos.locations import LOCATIONS
from inventory.chaos.restocks import Adjust, StockKeeper

THINK = 0.8  # seconds between two steps, on average
LOW = 10  # a located goods id with fewer units than this in all is restocked
RETRIES = 3
RETRY_PAUSE = 0.5


@dataclass
class Move:
    """One request of the mover as it saw it."""

    reference: str
    step: str  # send, receive, cancel
    goods_id: str
    transfer_id: str | None
    body: dict[str, Any] | None
    invoke: float
    complete: float = 0.0
    status: int = 0  # 0: no answer
    state: str | None = None  # the transfer's state as answered
    repeat: bool = False  # sent again on purpose after an answer
    retry: int = 0  # sent again after no answer or a 5xx
    error: str | None = None


@dataclass
class Mover(StockKeeper):
    located: list[str] = field(default_factory=list)
    low: int = LOW
    moves: list[Move] = field(default_factory=list)

    def _keep(self) -> None:
        rng = random.Random(self.seed * 104_729)
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        sent: list[Move] = []  # answered 2xx and not received or cancelled yet
        n = 0
        while self.located and not self._stop.wait(THINK * rng.uniform(0.5, 1.5)):
            n += 1
            if sent and rng.random() < 0.5:
                self._settle(conn, rng, sent.pop(rng.randrange(len(sent))))
                continue
            goods = rng.choice(self.located)
            levels = self._levels(conn, goods)
            if levels is None:
                continue
            if sum(levels.values()) < self.low:
                where = rng.choice(list(LOCATIONS))
                reference = f"{self.prefix}madj{n}"
                body = {"delta": rng.randint(4, 12), "location": where}
                body |= {"reason": "restock", "reference": reference}
                self.ops.append(self._send(conn, Adjust(reference, goods, "restock", body, 0.0)))
                continue
            source = max(sorted(levels), key=lambda loc: levels[loc])
            target = rng.choice([loc for loc in LOCATIONS if loc != source])
            units = rng.randint(1, min(3, levels[source]))
            reference = f"{self.prefix}tr{n}"
            body = {"goodsId": goods, "from": source, "to": target, "units": units}
            body["reference"] = reference
            move = self._step(conn, Move(reference, "send", goods, None, body, 0.0))
            if move.status in (200, 201) and rng.random() < 0.25:
                self._step(conn, Move(reference, "send", goods, None, body, 0.0, repeat=True))
            if move.status in (200, 201) and move.transfer_id:
                sent.append(move)

    def _settle(self, conn: http.client.HTTPConnection, rng: random.Random, sent: Move) -> None:
        step = "receive" if rng.random() < 0.7 else "cancel"
        steps = [(step, False)]
        if rng.random() < 0.25:
            steps.append((step, True))
        if rng.random() < 0.1:
            steps.append(("cancel" if step == "receive" else "receive", False))
        for name, repeat in steps:
            move = Move(sent.reference, name, sent.goods_id, sent.transfer_id, None, 0.0)
            move.repeat = repeat
            self._step(conn, move)

    def _step(self, conn: http.client.HTTPConnection, move: Move) -> Move:
        """The step, sent again while it has no answer or a 5xx (RETRIES times at most);
        every attempt kept. Returns the last."""
        path = "/transfers" if move.step == "send" else f"/transfers/{move.transfer_id}/{move.step}"
        for retry in range(RETRIES + 1):
            attempt = Move(**{**asdict(move), "retry": retry})
            attempt.invoke = self.clock.now()
            attempt.status, answer = self._request(conn, "POST", path, move.body)
            attempt.complete = self.clock.now()
            attempt.state = answer.get("state")
            attempt.transfer_id = answer.get("transferId") or move.transfer_id
            attempt.error = answer.get("error")
            self.moves.append(attempt)
            if 0 < attempt.status < 500 or self._stop.is_set():
                return attempt
            time.sleep(RETRY_PAUSE)
        return attempt

    def _levels(self, conn: http.client.HTTPConnection, goods: str) -> dict[str, int] | None:
        """The goods id's level at each of the run's locations, as GET /stock answers it."""
        status, answer = self._request(conn, "GET", f"/stock/{goods}", None)
        if status != 200 or not isinstance(answer.get("locations"), list):
            return None
        found = {p.get("location"): p.get("num") for p in answer["locations"]}
        return {loc: int(found.get(loc) or 0) for loc in LOCATIONS}
