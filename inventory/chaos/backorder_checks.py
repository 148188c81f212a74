"""The chaos run's checks of backorders and reservations (docs/backorders.md), after the
settlement, on the run's goods:

B1 the cap at every entry of the ledger: the units a goods id owes never above its limit;
B2 fill order: no hand-over to a line while an earlier line of its goods id waits;
   (B1, B2: inventory/check/backorders.py, which says how a give-up is placed)
R1 one end per reservation, its units conserved (inventory/check/reservations.py);
RA every reservation request's answer holds (reservations.py's steps): the posts of one
   Idempotency-Key answered one reservation; a reservation answered
   201 ends consumed, released or expired, one refused (409) held nothing; a consume answered
   200 ends consumed, by an order of its id; a release answered 200 ends released; a consume
   or a release refused (409) did not end it so.
And the figures the report gives: the backordered lines (filled, waiting, cancelled), the
hand-overs, the reservations by end, the reserver's requests.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Engine, select

from inventory.chaos.reservations import Reserver, Step
from inventory.chaos.verdict import UNKNOWN, VALID, VIOLATED, Verdict, violated_if
from inventory.check.backorders import check_cap, check_fill_order, figures, read_backorders
from inventory.check.reservations import Reservation, check_reservations, read_reservations
from order_service.storage.tables import reservation_lines, reservations
from shared.database.engines import utcnow

SETTLE_WAIT = 120.0  # seconds for the reconcilers to end the reservations still open
OPEN = ("pending", "held")


def _verdict(result: Any) -> Verdict:
    examples: list[str] = []
    for value in result.numbers.values() if not result.ok else ():
        if isinstance(value, list) and value:
            examples += [str(v) for v in value][:20]
    verdict = VALID if result.ok else VIOLATED
    return Verdict(result.invariant, result.name, verdict, result.detail, examples[:20])


def wait_for_ends(order_engine: Engine, prefix: str, bound: float = SETTLE_WAIT) -> int:
    """Wait until no reservation of the run is pending or held (the elected reconciler expires
    and settles them), at most `bound` seconds; the ones still open then."""
    rl, r = reservation_lines.c, reservations.c
    scope = select(rl.reservation_id).where(rl.goods_id.like(f"{prefix}%"))
    query = select(r.id).where(r.id.in_(scope), r.state.in_(OPEN))
    deadline = time.monotonic() + bound
    while True:
        with order_engine.connect() as conn:
            left = len(conn.execute(query).all())
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(1.0)


def backorder_verdicts(
    order_engine: Engine, stock_engine: Engine, prefix: str, steps: Sequence[Step]
) -> tuple[list[Verdict], dict[str, Any]]:
    """B1, B2, R1, RA and the figures."""
    verdicts: list[Verdict] = []
    numbers: dict[str, Any] = {}
    try:
        data = read_backorders(stock_engine, prefix)
        verdicts += [_verdict(check_cap(data)), _verdict(check_fill_order(data))]
        numbers["backorders"] = figures(data)
    except Exception as exc:
        verdicts.append(Verdict("B", "backorders", UNKNOWN, f"{type(exc).__name__}: {exc}"))
    try:
        wait_for_ends(order_engine, prefix)
        found = read_reservations(order_engine, stock_engine, prefix)
        verdicts.append(_verdict(check_reservations(found, utcnow())))
        verdicts.append(answers_hold(steps, {res.id: res for res in found}))
        numbers["reservations"] = reservation_figures(steps, found)
    except Exception as exc:
        verdicts.append(Verdict("R", "reservations", UNKNOWN, f"{type(exc).__name__}: {exc}"))
    return verdicts, numbers


def said(numbers: dict[str, Any]) -> str:
    return f"backorders {numbers.get('backorders')}; reservations {numbers.get('reservations')}"


def judge(
    order_engine: Engine, stock_engine: Engine, reserver: Reserver, numbers: dict[str, Any]
) -> list[Verdict]:
    """The verdicts of the run's backorders and reservations; `numbers` filled with figures."""
    found, figures_ = backorder_verdicts(
        order_engine, stock_engine, reserver.prefix, reserver.steps
    )
    numbers.update(figures_)
    return found


def answers_hold(steps: Sequence[Step], found: Mapping[str, Reservation]) -> Verdict:
    """RA (see the module's doc)."""
    bad: list[str] = []
    for step in steps:
        if step.reservation is None or step.status not in (200, 201, 409):
            continue
        res = found.get(step.reservation)
        end = res.state if res is not None else None
        said = f"{step.reservation}: {step.step} answered {step.status} {step.state}, ends {end}"
        if step.step == "reserve":
            if step.status == 201 and end not in ("consumed", "released", "expired"):
                bad.append(said)
            if step.status == 409 and res is not None and res.flows != res.returns:
                bad.append(f"{said}, with {res.flows} taken")
        elif step.step == "consume":
            if step.status == 200 and (end != "consumed" or step.order_id != step.reservation):
                bad.append(f"{said} (order {step.order_id})")
            if step.status == 409 and end == "consumed" and step.state != "consumed":
                bad.append(said)
        elif step.step == "release":
            if step.status == 200 and end != "released":
                bad.append(said)
            if step.status == 409 and end == "released":
                bad.append(said)
    made: dict[str, set[str]] = defaultdict(set)  # a POST's key -> the reservations answered
    for step in steps:
        if step.step == "reserve" and step.key and step.reservation:
            made[step.key].add(step.reservation)
    bad += [
        f"key {k}: {sorted(ids)}, one key's posts answered more than one"
        for k, ids in sorted(made.items())
        if len(ids) > 1
    ]
    asked = Counter(f"{s.step} {s.status or 'no answer'}" for s in steps)
    shown = ", ".join(f"{k} {n}" for k, n in sorted(asked.items())) or "none"
    return Verdict(
        "RA",
        "every reservation request's answer holds",
        violated_if(bad),
        f"{len(steps)} requests ({shown}; {sum(s.repeat for s in steps)} repeats once "
        f"answered, {sum(s.retry > 0 for s in steps)} retries; {len(made)} keys, each one "
        f"reservation or not); {len(bad)} contradicted by the end",
        bad[:20],
    )


def reservation_figures(steps: Sequence[Step], found: Sequence[Reservation]) -> dict[str, Any]:
    ends = Counter(res.state for res in found)
    by_step: dict[str, int] = defaultdict(int)
    for step in steps:
        by_step[step.step] += 1
    return {
        **{state: ends.get(state, 0) for state in ("consumed", "released", "expired", "failed")},
        "open": sum(ends.get(s, 0) for s in OPEN),
        "requests": dict(by_step),
        "repeats": sum(s.repeat for s in steps),
        "retries": sum(s.retry > 0 for s in steps),
    }
