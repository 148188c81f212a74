"""R1, reservations (docs/backorders.md): one end per reservation, its units conserved. Read from
both databases for the reservations with a line of the goods ids of a prefix: the order
database's `reservations` and `reservation_lines` (and any order of the same id: a consumed
reservation's order has its id), the stock database's flows and returns of its flag (the
reservation's id).

Each reservation ends in exactly one state, and its units agree with it:
- consumed: its order exists (the reservation's id), its flag's flows are its lines, and
  nothing came back (unless the order itself was cancelled: then returned exactly once);
- released or expired: no order; its flows are its lines and came back exactly (the returns
  equal the flows: units back once, `returned_at` set), or nothing was ever deducted (released
  while pending) and nothing came back;
- failed: no order, nothing deducted (or, deducted and voided after all, returned exactly);
- pending (never settled yet) and held: counted, a violation once it holds units past its
  expiry and the bound (`late`), or pending with units taken.
A state outside these, or a reservation both consumed and given back, is a violation.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import Engine, select

from inventory.check.result import CheckResult
from order_service.storage.tables import orders, reservation_lines, reservations
from stock_service.storage.tables import stock_flow, stock_return

ENDS = ("consumed", "released", "expired", "failed", "pending", "held")
LATE = 60.0  # seconds past its expiry a reservation may still be held (the pass's bound)


@dataclass(frozen=True)
class Reservation:
    id: str
    state: str
    lines: dict[str, int]
    expires_at: datetime | None = None
    returned_at: datetime | None = None
    order: str | None = None  # the status of the order of its id, if any
    flows: dict[str, int] = field(default_factory=dict)
    returns: dict[str, int] = field(default_factory=dict)


def read_reservations(order_engine: Engine, stock_engine: Engine, prefix: str) -> list[Reservation]:
    rl, r, o = reservation_lines.c, reservations.c, orders.c
    lines: dict[str, dict[str, int]] = defaultdict(dict)
    rows = {}
    with order_engine.connect() as conn:
        scope = select(rl.reservation_id).where(rl.goods_id.like(f"{prefix}%"))
        for line in conn.execute(
            select(rl.reservation_id, rl.goods_id, rl.num).where(rl.reservation_id.in_(scope))
        ):
            lines[line.reservation_id][line.goods_id] = int(line.num)
        for row in conn.execute(select(reservations).where(r.id.in_(scope))):
            rows[row.id] = row
        made = {
            row.id: row.status
            for row in conn.execute(select(o.id, o.status).where(o.id.in_(scope)))
        }
    ids = sorted(rows)
    flows: dict[str, dict[str, int]] = defaultdict(dict)
    back: dict[str, dict[str, int]] = defaultdict(dict)
    with stock_engine.connect() as conn:
        for table, into in ((stock_flow, flows), (stock_return, back)):
            for i in range(0, len(ids), 500):
                chunk = ids[i : i + 500]
                query = select(table.c.flag, table.c.goods_id, table.c.num)
                for m in conn.execute(query.where(table.c.flag.in_(chunk))):
                    into[m.flag][m.goods_id] = into[m.flag].get(m.goods_id, 0) + int(m.num)
    return [
        Reservation(
            i,
            rows[i].state,
            lines.get(i, {}),
            rows[i].expires_at,
            rows[i].returned_at,
            made.get(i),
            flows.get(i, {}),
            back.get(i, {}),
        )
        for i in ids
    ]


def problems(res: Reservation, now: datetime, late: float = LATE) -> list[str]:
    """What is wrong with one reservation's end (empty: nothing)."""
    name = f"{res.id} ({res.state})"
    found: list[str] = []
    if res.state not in ENDS:
        return [f"{name}: no such state"]
    if res.state != "consumed" and res.order is not None:
        found.append(f"{name}: has an order ({res.order})")
    if res.state == "consumed":
        if res.order is None:
            found.append(f"{name}: consumed, no order of its id")
        if res.flows != res.lines:
            found.append(f"{name}: flows {res.flows}, lines {res.lines}")
        if res.returns and (res.order != "CANCELLED" or res.returns != res.flows):
            found.append(f"{name}: consumed, yet returned {res.returns}")
    elif res.state in ("released", "expired"):
        if res.flows and (res.flows != res.lines or res.returns != res.flows):
            found.append(f"{name}: flows {res.flows}, returns {res.returns}, lines {res.lines}")
        if not res.flows and res.returns:
            found.append(f"{name}: returned {res.returns} of nothing deducted")
        if res.returns and res.returned_at is None:
            found.append(f"{name}: returned, but returned_at is not set")
    elif res.state == "failed":
        if res.flows and res.returns != res.flows:
            found.append(f"{name}: failed, yet deducted {res.flows}, returned {res.returns}")
    elif res.state == "pending":
        if res.flows and res.returns != res.flows:
            found.append(f"{name}: pending with {res.flows} taken")
    elif res.expires_at is not None and now - res.expires_at > timedelta(seconds=late):
        found.append(
            f"{name}: still held {(now - res.expires_at).total_seconds():.0f} s past expiry"
        )
    return found


def check_reservations(found: list[Reservation], now: datetime, late: float = LATE) -> CheckResult:
    bad = [p for res in found for p in problems(res, now, late)]
    states = Counter(res.state for res in found)
    shown = ", ".join(f"{s} {n}" for s, n in sorted(states.items())) or "none"
    return CheckResult(
        "R1",
        "one end per reservation, its units conserved",
        not bad,
        f"{len(found)} reservations ({shown}); {len(bad)} with two ends, or units not as "
        "their end says",
        {"states": dict(states), "wrong": bad[:20]},
    )
