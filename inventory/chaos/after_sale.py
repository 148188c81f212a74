"""The chaos buyers' cancels and holds: which orders get one, their genOrder body, and the
cancel or pay sent after them, each recorded in the history as an Op of its kind.

- cancel-at once: a second connection cancels by Idempotency-Key (POST /cancelOrder) at the
  same time as the genOrder is sent: the cancel races the order's creation and its deduction
  (Seata's empty rollback and suspension, under faults). A cancel that arrives first leaves a
  tombstone under the key (200 CANCELLED, an order with no lines), and the genOrder is then
  answered 409 CANCELLED and deducts nothing.
- cancel: POST /orders/{orderId}/cancel once the order is confirmed.
- pay: a hold (payWithinSeconds) paid once placed; expire: a hold left unpaid, which the
  cluster's own reconcilers cancel past its deadline.
"""

from __future__ import annotations

import http.client
import json
import random
import time
from typing import Protocol

from inventory.chaos import locations
from inventory.chaos.history import UNKNOWN, Op

HOLD_SECONDS = 5  # a hold's time to pay: short, so expiries happen during the run
CANCEL_PATIENCE = 20.0  # seconds a cancel at once is tried again while no answer comes


class Clock(Protocol):
    def now(self) -> float: ...


def intent(rng: random.Random, cancel_share: float, hold_share: float) -> str:
    roll = rng.random()
    if roll < cancel_share:
        return rng.choice(("cancel-at-once", "cancel"))
    if roll < cancel_share + hold_share:
        return "expire" if rng.random() < 1 / 3 else "pay"
    return "none"


def scarce_intent(rng: random.Random) -> str:
    """Under SCARCE demand (workload.py) no unit placed comes back: eight orders in ten are
    plain, two in ten holds that are paid. Stock comes back to the scarce goods only when the
    nemesis restocks them (slow_attempts.py): a hold expiring or a cancel would refill a shelf
    it has just emptied, and let a retry that had to be refused through."""
    return "none" if rng.random() < 0.8 else "pay"


def order_body(
    key: str,
    lines: dict[str, int],
    intent: str,
    fill: str | None = None,
    named: dict[str, str] | None = None,
) -> bytes:
    """genOrder's body; `fill` and the lines' locations (`named`) only for an order of the
    located goods that asks for them (locations.py): the others' bodies are as they were."""
    items = locations.items(lines, named or {})
    body: dict[str, object] = {"userId": key.split("-")[-2], "items": items}
    if fill is not None:
        body["fill"] = fill
    if intent in ("pay", "expire"):
        body["payWithinSeconds"] = HOLD_SECONDS
    return json.dumps(body).encode()


def act(
    conn: http.client.HTTPConnection,
    clock: Clock,
    key: str,
    lines: dict[str, int],
    intent: str,
    order_id: str | None,
) -> Op:
    kind = "cancel" if intent == "cancel" else "pay"
    return post(conn, clock, key, lines, kind, f"/orders/{order_id}/{kind}", {})


def cancel_by_key(
    conn: http.client.HTTPConnection, clock: Clock, key: str, lines: dict[str, int]
) -> Op | None:
    """The cancel of `key`, sent at once: 200 CANCELLED at the first try is the common case
    (the order's, or, none yet, the key's own tombstone: no order will be placed under it).
    Sent again under the same key only while no answer comes (a cancel by key is idempotent);
    None if none came in time."""
    deadline = time.monotonic() + CANCEL_PATIENCE
    while time.monotonic() < deadline:
        op = post(conn, clock, key, lines, "cancel", "/cancelOrder", {"Idempotency-Key": key})
        if op.status != 0:
            op.intent = "cancel-at-once"
            return op
        time.sleep(0.2)
    return None


def post(
    conn: http.client.HTTPConnection,
    clock: Clock,
    key: str,
    lines: dict[str, int],
    kind: str,
    path: str,
    headers: dict[str, str],
) -> Op:
    op = Op(key, 0, False, lines, clock.now(), 0.0, kind=kind)
    try:
        conn.request("POST", path, headers=headers)
        response = conn.getresponse()
        raw = response.read()
        op.status = response.status
        try:
            answer = json.loads(raw)
        except ValueError:
            answer = {}
        if isinstance(answer, dict):
            op.order_id, op.order_status = answer.get("orderId"), answer.get("status")
            op.reason = answer.get("reason") or answer.get("error")
    except (http.client.HTTPException, OSError) as exc:
        conn.close()
        op.reason = f"no answer: {type(exc).__name__}"
    op.outcome = UNKNOWN  # cancels and pays are judged by H5, against the end
    op.complete = clock.now()
    return op
