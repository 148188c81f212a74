"""The history of a chaos run: one record per HTTP attempt, as the client saw it.

Outcomes of a genOrder, Jepsen's way: `ok` (200: the order is placed, CONFIRMED or held, or
BACKORDERED: what was on hand taken, the rest owed in line),
`fail` (409 insufficient_stock, or 409 limit_per_buyer, a buyer's per-buyer limit reached:
definite refusals, FAILED for good), and `unknown` for everything else (no answer, 5xx, 202
PENDING, a FAILED order for another reason). A checker may rely on ok and
fail; an unknown may have happened or not. Cancels and pays (kind `cancel`, `pay`) are in the
history too, their answers judged against the end by H5.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from order_service.core.statuses import INSUFFICIENT_STOCK

OK, FAIL, UNKNOWN = "ok", "fail", "unknown"
REFUSALS = (INSUFFICIENT_STOCK, "limit_per_buyer")  # the reasons of a definite refusal


@dataclass
class Op:
    key: str  # the Idempotency-Key: one logical order
    attempt: int  # 0 for the first send; retries and the double submit count up
    double: bool  # the second of a double submit (sent while the first is in flight)
    lines: dict[str, int]
    invoke: float  # seconds since the start of the run
    complete: float
    status: int = 0  # HTTP status; 0 when no answer came
    order_id: str | None = None
    order_status: str | None = None
    reason: str | None = None
    outcome: str = UNKNOWN
    extra: dict[str, object] = field(default_factory=dict)
    # order: POST /genOrder; cancel: POST /orders/{id}/cancel (or by key); pay: .../pay
    kind: str = "order"
    intent: str = "none"  # what the buyer means to do after it: cancel, pay, expire

    @property
    def latency(self) -> float:
        return self.complete - self.invoke


def classify(status: int, body: object) -> tuple[str, str | None, str | None, str | None]:
    """(outcome, order id, order status, reason) of one answer."""
    data = body if isinstance(body, dict) else {}
    order_id, order_status, reason = data.get("orderId"), data.get("status"), data.get("reason")
    if status == 200 and order_status in ("CONFIRMED", "AWAITING_PAYMENT", "BACKORDERED"):
        return OK, order_id, order_status, reason
    if status == 409 and order_status == "FAILED" and reason in REFUSALS:
        return FAIL, order_id, order_status, reason
    return UNKNOWN, order_id, order_status, reason if reason else data.get("error")


def write(ops: Iterable[Any], path: Path) -> None:
    """A run's records (the buyers' Ops, the operators' Adjusts, Moves and Steps: dataclasses
    with an `invoke`) as JSON lines, in the order they were sent."""
    with open(path, "w") as out:
        for op in sorted(ops, key=lambda o: o.invoke):
            out.write(json.dumps(asdict(op), sort_keys=True) + "\n")


def read(path: Path) -> list[Op]:
    return [Op(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]
