"""What a plan's ledger lines become in the stock database, as pure logic: the rows of the stock
flow, the returns and the adjustments (each with its seq and the level it left), and the stock
events of the outbox: one per ledger line, and one per threshold a line crosses.

    deducted / returned / adjusted    every ledger line (delta, the level after, where)
    transfer_out / transfer_in        a transfer's legs
    out_of_stock                      the level came to 0 from above
    back_in_stock                     the level left 0
    low_stock                         the level fell below the goods id's threshold (if set)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from shared.ids import new_id
from stock_service.core.places import DEFAULT, parts_text, units_text
from stock_service.core.plan import Entry, Plan, Request

EVENT_KINDS = (
    "deducted",
    "returned",
    "adjusted",
    "transfer_out",
    "transfer_in",
    "backordered",
    "backorder_filled",
    "low_stock",
    "out_of_stock",
    "back_in_stock",
)


def ledger_rows(
    the_plan: Plan,
    requests: Sequence[Request],
    tokens: Mapping[str, int | None],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The rows of the plan's lines: flows (deductions), returns, adjustments, transfer legs."""
    flows: list[dict[str, Any]] = []
    returns: list[dict[str, Any]] = []
    adjustments: list[dict[str, Any]] = []
    legs: list[dict[str, Any]] = []
    for entry in the_plan.entries:
        request = requests[entry.index]
        common = {
            "id": new_id(),
            "goods_id": entry.goods_id,
            "fence": tokens.get(entry.goods_id),
            "seq": entry.seq,
            "level_after": entry.level_after,
        }
        if entry.kind == "adjusted":
            adjustment = request.adjust
            assert adjustment is not None
            adjustments.append(
                {
                    **common,
                    "id": request.flag,
                    "delta": entry.delta,
                    "reason": adjustment.reason,
                    "reference": adjustment.reference,
                    "expected": adjustment.expected,
                    "location": adjustment.location,
                }
            )
            continue
        if entry.kind in ("backordered", "backorder_filled"):
            continue  # backorder_rows
        if request.transfer is not None:
            [(location, _)] = entry.parts
            del common["id"]
            legs.append(
                {
                    **common,
                    "transfer_id": request.transfer.transfer_id,
                    "leg": "out" if entry.kind == "transfer_out" else "in",
                    "location_id": location,
                    "delta": entry.delta,
                }
            )
            continue
        row = {
            **common,
            "flag": request.flag,
            "num": abs(entry.delta),
            "seed_version": entry.seed_version,
        }
        (flows if entry.kind == "deducted" else returns).append(row)
    return flows, returns, adjustments, legs


def allocation_rows(entries: Sequence[Entry], requests: Sequence[Request]) -> list[dict[str, Any]]:
    """Where each deducted line's units came from, when not all from the default location
    (none written: all from there, which is what a return of it reads)."""
    rows: list[dict[str, Any]] = []
    for entry in entries:
        if entry.kind != "deducted" or all(loc == DEFAULT for loc, _ in entry.parts):
            continue
        flag = requests[entry.index].flag
        rows.extend(
            {"flag": flag, "goods_id": entry.goods_id, "location_id": loc, "num": -delta}
            for loc, delta in entry.parts
        )
    return rows


def outbox_rows(
    entries: Sequence[Entry],
    requests: Sequence[Request],
    before: Mapping[str, int],
    thresholds: Mapping[str, int | None],
) -> list[dict[str, Any]]:
    """The stock events of these ledger lines, in ledger order: each line, and after it each
    threshold it crossed. `before`: each goods id's level before the first line (a goods id
    missing there comes into being: its first line crosses nothing)."""
    level: dict[str, int | None] = dict(before)
    events: list[dict[str, Any]] = []
    for entry in entries:
        request = requests[entry.index]
        was, now = level.get(entry.goods_id), entry.level_after
        level[entry.goods_id] = now
        adjustment = request.adjust
        common = {
            "goods_id": entry.goods_id,
            "seq": entry.seq,
            "level": now,
            "location": parts_text(entry.parts),
        }
        events.append(
            {
                **common,
                "kind": entry.kind,
                "delta": entry.delta,
                "flag": entry.flag or (None if adjustment or request.transfer else request.flag),
                "reason": adjustment.reason if adjustment else _transfer_reason(request),
            }
        )
        for crossed in [] if was is None else crossings(was, now, thresholds.get(entry.goods_id)):
            events.append({**common, "kind": crossed, "delta": 0, "flag": None, "reason": None})
    return events


def crossings(was: int, now: int, threshold: int | None) -> list[str]:
    """The thresholds a level crossed going from `was` to `now`."""
    found = []
    if threshold is not None and was >= threshold > now:
        found.append("low_stock")
    if was > 0 and now == 0:
        found.append("out_of_stock")
    if was == 0 and now > 0:
        found.append("back_in_stock")
    return found


def _transfer_reason(request: Request) -> str | None:
    """A transfer leg's event names its transfer (its reference)."""
    move = request.transfer
    return None if move is None else f"transfer {move.transfer_id} ({move.reference})"[:200]


def backorder_rows(
    the_plan: Plan, tokens: Mapping[str, int | None]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[tuple[str, str], int]]:
    """The lines that start waiting (backorder rows), each hand-over of units to one (fill rows,
    ledger lines), and the units each waiting line (flag, goods id) got now."""
    waiting: list[dict[str, Any]] = []
    fills: list[dict[str, Any]] = []
    if the_plan.backorders is None:
        return waiting, fills, {}
    level = {(e.goods_id, e.seq): e.level_after for e in the_plan.entries}
    for line in the_plan.backorders.new:
        waiting.append(
            {
                "flag": line.flag,
                "goods_id": line.goods_id,
                "position": line.position,
                "level_after": level[(line.goods_id, line.position)],
                "wanted": line.remaining,
                "filled": 0,
                "state": "waiting",
                "location": line.location,
            }
        )
    for entry in the_plan.entries:
        if entry.kind == "backorder_filled":
            fills.append(
                {
                    "id": new_id(),
                    "flag": entry.flag,
                    "goods_id": entry.goods_id,
                    "num": -entry.delta,
                    "seq": entry.seq,
                    "level_after": entry.level_after,
                    "location": units_text(entry.parts),
                    "fence": tokens.get(entry.goods_id),
                }
            )
    return waiting, fills, dict(the_plan.backorders.filled)
