"""The chaos run's checks of stock in several locations (docs/locations.md), after the
settlement, on the run's goods:

L1 no location below zero;
L2 each location's level replays from its entries;
L3 every transfer's legs once (an out leg each; an in leg exactly for the received and the
   cancelled, at `to` and at `from`);
L4 the ledger holds with transfers (each goods id's level is the sum of its entries);
   (L1-L4: inventory/check/locations.py, the checks `tests/integration/test_locations.py` uses)
L5 the allocation rule held: every deduction line replayed against the levels each location had
   just before it (inventory/check/allocation_rule.py), the orders' lines and named locations
   read from the order database;
LT every transfer's answer holds: a reference answered sent has its transfer (goods id,
   locations, units as sent), one refused none, at most one send answered 201 a reference;
   a step answered received or cancelled ends so, one refused (409) does not; no transfer of
   the run's goods the mover never sent.
And the figures the report gives: the transfers by final state, the mover's requests, the
located orders (named, partial, partly filled), the split lines.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Engine, select

from inventory.chaos.transfers import Move
from inventory.chaos.verdict import UNKNOWN, VALID, VIOLATED, Verdict, violated_if
from inventory.check import Snapshot
from inventory.check.allocation_rule import Asked, check_rule_held
from inventory.check.ledger_replay import read_ledger
from inventory.check.ledger_replay import read_places as read_location_rows
from inventory.check.locations import check_locations, read_places
from stock_service.storage.tables import stock_transfer

PLACED = ("CONFIRMED", "AWAITING_PAYMENT", "CANCELLED")  # deducted once (a cancel returned it)


def location_verdicts(
    engine: Engine, prefix: str, snap: Snapshot, places: Mapping[str, tuple[int, bool]]
) -> tuple[list[Verdict], dict[str, Any]]:
    """L1-L5, and the figures. `engine`: reads each check's tables in one snapshot (the
    checker's REPEATABLE READ on PostgreSQL: the reconcilers may still expire holds);
    `places`: the locations as the run set them (L5 is unknown if the database has others)."""
    figures: dict[str, Any] = {"orders": located_orders(snap)}
    try:
        verdicts = [_verdict(r) for r in check_locations(read_places(engine, prefix))]
        with engine.connect() as conn:
            ledger = read_ledger(conn, like=f"{prefix}%")
            rows = read_location_rows(conn)
    except Exception as exc:
        failed = Verdict("L", "locations", UNKNOWN, f"{type(exc).__name__}: {exc}")
        return [failed], figures
    changed = {loc: rows.get(loc) for loc, asked in places.items() if rows.get(loc) != asked}
    asked = {
        o: Asked(lines, snap.line_locations.get(o, {}), o in snap.partial)
        for o, lines in snap.lines.items()
    }
    rule = check_rule_held(ledger, rows, asked)
    figures["splits"] = rule.numbers["splits"]
    l5 = _verdict(rule)
    if changed and l5.verdict == VALID:
        l5.verdict = UNKNOWN
        l5.detail += f"; but the locations are not as the run set them: {changed}"
    return [*verdicts, l5], figures


def _verdict(result: Any) -> Verdict:
    """A check's result as a verdict, its listings as the counterexamples (when violated: L3
    lists the units in transit too)."""
    examples: list[str] = []
    for value in result.numbers.values() if not result.ok else ():
        if isinstance(value, list | dict) and value:
            examples += [str(v) for v in value][:10]
    verdict = VALID if result.ok else VIOLATED
    return Verdict(result.invariant, result.name, verdict, result.detail, examples[:20])


def located_orders(snap: Snapshot) -> dict[str, int]:
    """The orders that asked for a fill or named a location, and what became of them."""
    partial = [o for o in snap.partial if o in snap.orders]
    placed = [o for o in partial if snap.orders[o] in PLACED and snap.filled.get(o)]
    partly = [
        o
        for o in placed
        if any(snap.filled[o].get(g, 0) < n for g, n in snap.lines.get(o, {}).items())
    ]
    return {
        "named": sum(1 for o in snap.line_locations if o in snap.orders),
        "partial": len(partial),
        "partial_placed": len(placed),
        "partly_filled": len(partly),
        "partial_refused": sum(1 for o in partial if snap.orders[o] == "FAILED"),
    }


def read_transfers(engine: Engine, prefix: str) -> dict[str, tuple[str, ...]]:
    """reference -> (transfer id, goods id, from, to, units, state) of the run's goods."""
    t = stock_transfer.c
    query = select(
        t.reference, t.transfer_id, t.goods_id, t.from_location, t.to_location, t.units, t.state
    ).where(t.goods_id.like(f"{prefix}%"))
    with engine.connect() as conn:
        return {r.reference: tuple(str(v) for v in r[1:]) for r in conn.execute(query)}


def transfers_hold(moves: Sequence[Move], found: Mapping[str, tuple[str, ...]]) -> Verdict:
    """LT: the mover's answers against the transfers the stock database has."""
    bad: list[str] = []
    by_reference: dict[str, list[Move]] = defaultdict(list)
    for move in moves:
        by_reference[move.reference].append(move)
    for reference, asked in by_reference.items():
        sends = [m for m in asked if m.step == "send"]
        row = found.get(reference)
        body = sends[0].body or {} if sends else {}
        sent = (body.get("goodsId"), body.get("from"), body.get("to"), str(body.get("units")))
        if sum(m.status == 201 for m in sends) > 1:
            bad.append(f"{reference}: answered 201 twice")
        if any(m.status in (200, 201) for m in sends):
            if row is None or row[1:5] != sent:
                bad.append(f"{reference}: answered sent {sent}, the database has {row}")
        elif row is not None and all(m.status == 409 for m in sends):
            bad.append(f"{reference}: refused, yet the database has {row}")
        final = row[5] if row is not None else None
        for m in asked:
            if m.step == "send" or m.status not in (200, 409):
                continue
            after = {"receive": "received", "cancel": "cancelled"}[m.step]
            if m.status == 200 and final != m.state:
                bad.append(f"{reference}: {m.step} answered {m.state}, ends {final}")
            if m.status == 409 and final == after:
                bad.append(f"{reference}: {m.step} refused, yet it ends {final}")
    bad += [f"{ref}: a transfer the mover never sent" for ref in found if ref not in by_reference]
    states = Counter(row[5] for row in found.values())
    steps = Counter(f"{m.step} {m.status or 'no answer'}" for m in moves)
    repeats = sum(m.repeat for m in moves)
    retries = sum(m.retry > 0 for m in moves)
    return Verdict(
        "LT",
        "every transfer's answer holds",
        violated_if(bad),
        f"{len(found)} transfers ({', '.join(f'{s} {n}' for s, n in sorted(states.items()))}); "
        f"{len(moves)} requests ({', '.join(f'{k} {n}' for k, n in sorted(steps.items()))}; "
        f"{repeats} repeats once answered, {retries} retries after no answer or a 5xx); "
        f"{len(bad)} contradicted by the stock database",
        bad[:20],
    )


def transfer_figures(moves: Sequence[Move], found: Mapping[str, tuple[str, ...]]) -> dict[str, Any]:
    states = Counter(row[5] for row in found.values())
    return {
        "sent": len(found),
        "received": states.get("received", 0),
        "cancelled": states.get("cancelled", 0),
        "in_transit": states.get("in_transit", 0),
        "requests": len(moves),
        "repeats": sum(m.repeat for m in moves),
        "retries": sum(m.retry > 0 for m in moves),
        "refused": sum(m.status == 409 for m in moves),
        "unanswered": sum(m.status == 0 for m in moves),
    }
