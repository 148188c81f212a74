"""Backorders in a chaos run (docs/backorders.md): a few goods ids (OWED below) with a backorder
limit and a low level, a small share of the buyers' orders of them with `"fill": "backorder"`
(workload.py), and an operator restocking them, whose arrivals fill the waiting lines oldest
first, in the commit of the arrival, through every fault.

- set up before the load: each goods id seeded at SEED units (with the run's other goods,
  stock_side.py, all in `default`), then its limits (PUT /stock/{g}/policy, the admin token):
  LIMIT units owed at once, and NEAR_LIMIT by the lines naming NEAR (a location of the run,
  locations.py, made before). The run never changes a limit after that: B1 judges every entry
  against them;
- the orders: one line of 1 or 2 units (a line of 2 is often filled in parts), a quarter of
  them naming NEAR (what NEAR has taken, the rest owed there within NEAR_LIMIT and LIMIT) and
  some naming `default` (no limit of its own: LIMIT alone), the rest no location; all answered
  CONFIRMED (on hand), BACKORDERED (the rest owed) or refused (the limit reached: FAILED,
  insufficient_stock); a quarter of them meant to be cancelled, and cancelled once answered
  BACKORDERED (POST /orders/{id}/cancel: it gives back what it took and was handed, and gives
  up its place);
- the restocker: an adjustment of 1-3 units of one of them every THINK seconds or so, at NEAR
  for NEAR_SHARE of them (serving the lines naming NEAR or none, oldest first) and else at
  `default` (the lines naming `default` or none), only while it owes units (GET /stock's
  `owed`; reference `{prefix}badj{n}`, judged by HA with the stock keeper's: never retried,
  since a delta sent twice counts twice), so lines wait long enough to be cancelled, and are
  filled. Restocked whatever it owed, the shelf kept up with the
  buyers' few orders of it in a slower run, and no line ever waited (a quick run in CI: none).
The checks (backorder_checks.py): B1 the caps at every entry of the ledger (the goods id's, and
NEAR's over the lines naming it), B2 the fill order per location, beside I1-I10 and H1-H5,
which count the hand-overs and know BACKORDERED.
"""

from __future__ import annotations

import http.client
import random
from dataclasses import dataclass, field
from typing import Any

import httpx

from inventory.chaos.locations import LOCATIONS
from inventory.chaos.restocks import Adjust, StockKeeper

OWED = 2  # goods ids sold beyond what is on hand
SEED = 2  # each one's level at the start
LIMIT = 6  # the units each may owe at once
CANCEL_SHARE = 0.25  # of its orders, cancelled once answered BACKORDERED
THINK = 1.5  # seconds between two restocks, on average
BACKORDER = "backorder"
NEAR = next(iter(LOCATIONS))  # a location of the run, with a backorder limit of its own
NEAR_LIMIT = 3  # the units the lines naming NEAR may owe at once
# of the orders: naming NEAR, naming `default` (the rest name none)
NAMED_SHARES = ((NEAR, 0.25), ("default", 0.15))
NEAR_SHARE = 0.4  # of the restocks, at NEAR (the rest at `default`)


def owed_goods(prefix: str, count: int = OWED) -> dict[str, int]:
    """goods id -> its seeded level."""
    return {f"{prefix}owe{i}": SEED for i in range(count)}


def set_up(client: httpx.Client, goods: dict[str, int]) -> None:
    """Each goods id's limit (they are seeded already, with the run's other goods)."""
    for goods_id in goods:
        body = {"backorderLimit": LIMIT, "locations": {NEAR: NEAR_LIMIT}}
        answer = client.put(f"/stock/{goods_id}/policy", json=body)
        answer.raise_for_status()


def order(rng: random.Random, goods: list[str]) -> tuple[dict[str, int], dict[str, str]]:
    """One line of 1 or 2 units of one of them, and the location it names (if it names one)."""
    goods_id = rng.choice(goods)
    draw, named = rng.random(), {}
    for location, share in NAMED_SHARES:
        if draw < share:
            named = {goods_id: location}
            break
        draw -= share
    return {goods_id: rng.choice((1, 2, 2))}, named


def intent(rng: random.Random) -> str:
    """Cancelled once answered (no hold: fill=backorder takes none)."""
    return "cancel" if rng.random() < CANCEL_SHARE else "none"


@dataclass
class Restocker(StockKeeper):
    """The operator's arrivals of the backordered goods."""

    owed: list[str] = field(default_factory=list)

    def _keep(self) -> None:
        rng = random.Random(self.seed * 15_485_863)
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        n = 0
        while self.owed and not self._stop.wait(THINK * rng.uniform(0.5, 1.5)):
            n += 1
            goods = rng.choice(self.owed)
            if not self._owes(conn, goods):
                continue  # on hand, or unknown for now: the buyers take the shelf down first
            reference = f"{self.prefix}badj{n}"
            body: dict[str, Any] = {"delta": rng.randint(1, 3), "reason": "restock"}
            body["reference"] = reference
            if rng.random() < NEAR_SHARE:
                body["location"] = NEAR
            self.ops.append(self._send(conn, Adjust(reference, goods, "restock", body, 0.0)))

    def _owes(self, conn: http.client.HTTPConnection, goods: str) -> bool:
        status, answer = self._request(conn, "GET", f"/stock/{goods}", None)
        return status == 200 and int(answer.get("owed") or 0) > 0
