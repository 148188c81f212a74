"""The unfenced baseline's ledger lines (FENCING=false, LOCK_BACKEND=none): what the lock and the
fence prevent, shown and never hidden.

Without them nothing orders two holders' read-check-writes, and the level's write is the plain
last-writer-wins UPDATE: two holders that read the same level both write it less their own
sale, and one sale is lost from the level (an oversell, which the checker's I1 reports by how
much). Each ledger line is still numbered by the database, one seq per line: the UPDATE moves
the row's seq on by the lines it writes, and the lines take the seqs it gave, not the ones
planned from the read. So the lost update shows where it happened, in the level, and no two
lines of a goods id share a seq (`stock_flow`, `stock_return` and `stock_adjustment` are unique
on (goods_id, seq): a duplicate could only fail, never be written). Before, the lines kept the
seqs planned from the stale read, and a baseline run left two flows at one seq.

A row names its ledger line by `seq`, but for a backorder's waiting line, which names the
line that started it waiting by `position` (its place in the goods id's queue, oldest first):
both move with the line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from stock_service.core.backorders import Backorders
from stock_service.core.plan import Decision

# The columns that hold a ledger line's seq: `seq` (flows, returns, adjustments, stock events,
# transfer legs, hand-overs to waiting lines), `position` (a waiting line: its backordered line).
SEQ_COLUMNS = ("seq", "position")


def renumber(
    moved: Mapping[str, int], decisions: list[Decision], *rows: list[dict[str, Any]]
) -> None:
    """Moves the seq of every line and row of a goods id in `moved` by its offset: the
    decisions' entries (for the answers) and the rows about to be written (flows, returns,
    adjustments, stock events, transfer legs, waiting lines and their hand-overs)."""
    for decision in decisions:
        decision.entries = [
            replace(e, seq=e.seq + moved[e.goods_id]) if e.goods_id in moved else e
            for e in decision.entries
        ]
    for table in rows:
        for row in table:
            offset = moved.get(row["goods_id"])
            if not offset:
                continue
            for column in SEQ_COLUMNS:
                if column in row:
                    row[column] += offset


def renumber_give_ups(moved: Mapping[str, int], backorders: Backorders | None) -> None:
    """A line that gave up its place keeps where in the ledger it left (`gave_up_after`: the
    goods id's last seq then), which moves with the goods id's other lines."""
    if backorders is None:
        return
    for key, after in backorders.gave_up_after.items():
        offset = moved.get(key[1])
        if offset:
            backorders.gave_up_after[key] = after + offset
