"""Backorders, the order side's rules, as pure logic (docs/backorders.md).

An order placed with `fill: backorder` takes what is on hand and owes the rest, when the stock
service's backorder limit of each short goods id allows (else it is refused as all or nothing
is: FAILED, insufficient_stock). Its flag is decided `deducted` either way, so what the order
is comes from what the stock service tells of that deduction:

- reduceStock's answer `backordered` (HTTP 200): its `flows` carry the units taken now (one
  per goods id, none for a goods id of which nothing was on hand) and `backordered` the units
  each line still owes: BACKORDERED, each line's `filled` the units taken;
- reduceStock's `deducted`: everything was on hand, filled whole: CONFIRMED, as all or nothing;
- GET /flags/{flag}, decided `deducted`: its `flows` (the on-hand part again) and `backorders`,
  per goods id the units it owed when it started waiting (`wanted`), those handed to it since
  (`filled`) and its `state` (waiting, filled; cancelled only once the flag is returned). Some
  line waiting: BACKORDERED; every line filled (or none owed): CONFIRMED, filled whole. Each
  line's units had so far are its flow plus what it was handed.

Anything that does not add up to the order's lines (a flow of other goods or more units, a line
owed that is not the order's, taken and owed other than ordered) is None: never guessed, a
person looks at it, as with the flows of any deduction.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from order_service.core.fills import Filled, allocations_from, filled_from, flows_by_goods
from order_service.core.model import BACKORDERED, CONFIRMED
from order_service.storage.fill_store import Confirmed

WAITING, FILLED = "waiting", "filled"


@dataclass(frozen=True)
class Owing:
    """A backorder's deduction as the stock service told it: CONFIRMED (every line filled) or
    BACKORDERED (some line waits), and the units each line has had so far."""

    status: str
    filled: Filled


def taken_now(lines: Mapping[str, int], flows: Any) -> dict[str, int] | None:
    """The units each line took on hand when it was decided: a goods id of the order each,
    1 to its units, none for a line of which nothing was on hand (no flows at all: nothing
    was). None when they are not flows of these lines."""
    if isinstance(flows, list) and not flows:
        return dict.fromkeys(lines, 0)
    found = flows_by_goods(flows)
    if found is None or any(g not in lines or not 0 < n <= lines[g] for g, n in found.items()):
        return None
    return {g: found.get(g, 0) for g in lines}


def _units(rows: Any, keys: tuple[str, ...]) -> dict[str, tuple[Any, ...]] | None:
    """Rows of a stock answer by goods id: the named fields of each (None: not such rows)."""
    if not isinstance(rows, list):
        return None
    try:
        return {str(r["goodsId"]): tuple(r[k] for k in keys) for r in rows}
    except (KeyError, TypeError):
        return None


def _adds_up(lines: Mapping[str, int], taken: Mapping[str, int], owed: Mapping[str, int]) -> bool:
    """Taken now and owed make each line exactly, and no line is owed that the order has not."""
    return set(owed) <= set(lines) and all(taken[g] + owed.get(g, 0) == n for g, n in lines.items())


def backordered_of(lines: Mapping[str, int], answer: Any) -> Filled | None:
    """What reduceStock's `backordered` answer took of each line now (the units owed are the
    rest: order_service/core/fills.py, owed_json), with the allocations of what it took."""
    body = answer if isinstance(answer, dict) else {}
    taken = taken_now(lines, body.get("flows"))
    rows = _units(body.get("backordered"), ("num",))
    if taken is None or rows is None:
        return None
    try:
        owed = {g: int(n) for g, (n,) in rows.items()}
    except (TypeError, ValueError):
        return None
    if not any(n > 0 for n in owed.values()) or not _adds_up(lines, taken, owed):
        return None
    return Filled(taken, allocations_from(body))


def settled(lines: Mapping[str, int], flows: Any, answer: Any) -> Owing | None:
    """A backorder whose flag the stock database decided `deducted`, as GET /flags/{flag}
    tells it (`answer`, with its `backorders`): CONFIRMED when no line waits, BACKORDERED
    while one does, with each line's units had so far."""
    body = answer if isinstance(answer, dict) else {}
    allocations = allocations_from(body)
    if not body.get("backorders"):  # nothing owed: all or nothing, taken whole
        whole = filled_from(lines, flows, False)
        return Owing(CONFIRMED, Filled(whole, allocations)) if whole is not None else None
    taken = taken_now(lines, flows)
    rows = _units(body["backorders"], ("wanted", "filled", "state"))
    if taken is None or rows is None:
        return None
    try:
        owed = {g: (int(w), int(f), str(s)) for g, (w, f, s) in rows.items()}
    except (TypeError, ValueError):
        return None
    wanted = {g: w for g, (w, _, _) in owed.items()}
    if not _adds_up(lines, taken, wanted):
        return None
    for w, f, state in owed.values():
        if state not in (WAITING, FILLED) or not 0 <= f <= w or (state == FILLED) != (f == w):
            return None  # a cancelled line, or one filled past what it owed: not a deduction
    had = {g: taken[g] + owed.get(g, (0, 0, ""))[1] for g in lines}
    waiting = any(state == WAITING for _, _, state in owed.values())
    return Owing(BACKORDERED if waiting else CONFIRMED, Filled(had, allocations))


def backordered(order_id: str, lines: Mapping[str, int], answer: Any) -> Confirmed | None:
    """What a `backordered` answer records with the order's move to BACKORDERED: each line's
    units taken now, and where from; None when the answer is not a backorder of these lines."""
    taken = backordered_of(lines, answer)
    return Confirmed(order_id, taken, lines=True) if taken is not None else None
