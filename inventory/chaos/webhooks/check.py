"""W1, the webhook deliveries: a pure function over what the receiver logged, the outbox of the
run's goods ids and the subscription's dead letters (GET /subscriptions/{id}/failed).

- every outbox row of the subscribed goods ids was delivered at least once with a good
  signature (answered 2xx) or is dead-lettered: none lost;
- no delivery carried a bad signature, nor an event that is no outbox row of the run (an id the
  outbox lacks, or a goods id or seq other than its row's), nor one of a goods id the
  subscription does not name (its `goodsIds` filter);
- per goods id, the first receipts (the first 2xx of each event, in the log's order) come in seq
  order (never a lower seq after a higher; a threshold event shares its entry's seq), the
  replayed events (sent again by POST .../failed/replay, after later ones) left out.

Repeats (the same event accepted twice: at least once, a consumer dedupes by the event id) are
counted, never a violation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from inventory.chaos.verdict import VALID, VIOLATED, Verdict
from inventory.chaos.webhooks.receipts import Receipt
from inventory.check.events import OutboxRow

NAME = "webhook deliveries: each outbox row delivered signed or dead-lettered, in seq order"
LISTED = 20


@dataclass
class Judged:
    """W1's findings, each a list of examples (empty: it held) and the counts."""

    lost: list[str] = field(default_factory=list)
    bad_signatures: list[str] = field(default_factory=list)
    invented: list[str] = field(default_factory=list)
    out_of_order: list[str] = field(default_factory=list)
    numbers: dict[str, int] = field(default_factory=dict)

    @property
    def violations(self) -> list[str]:
        return [*self.lost, *self.bad_signatures, *self.invented, *self.out_of_order]


def judge(
    rows: Sequence[OutboxRow],
    receipts: Iterable[Receipt],
    dead: Collection[int],
    replayed: Collection[int] = (),
    subscribed: Collection[str] | None = None,
) -> Judged:
    """W1 over plain data: `rows` the outbox of the run's goods ids, `receipts` the receiver's
    log in its order (only those of the run's goods ids), `dead` the ids of the dead letters,
    `replayed` the ids the run asked to be sent again, `subscribed` the goods ids the
    subscription names (None: every one)."""
    if subscribed is not None:
        wanted = set(subscribed)
        rows = [row for row in rows if row.goods_id in wanted]
    by_id = {row.id: row for row in rows}
    found = Judged()
    first: dict[int, Receipt] = {}
    repeats = 0
    for r in receipts:
        if not r.valid:
            found.bad_signatures.append(f"#{r.event_id} {r.goods_id} seq {r.seq}: bad signature")
            continue
        if not r.accepted:
            continue
        if subscribed is not None and r.goods_id not in wanted:
            found.invented.append(f"#{r.event_id} {r.goods_id} seq {r.seq}: not subscribed")
            continue
        row = by_id.get(r.event_id)
        if row is None or (row.goods_id, row.seq) != (r.goods_id, r.seq):
            said = "no outbox row" if row is None else f"its row is {row.goods_id} seq {row.seq}"
            found.invented.append(f"#{r.event_id} {r.goods_id} seq {r.seq}: {said}")
            continue
        if r.event_id in first:
            repeats += 1
        else:
            first[r.event_id] = r
    found.lost = [
        f"#{row.id} {row.goods_id} seq {row.seq} {row.kind}: never delivered, not dead-lettered"
        for row in rows
        if row.id not in first and row.id not in dead
    ]
    found.out_of_order = _out_of_order(first.values(), set(replayed))
    found.numbers = {
        "rows": len(rows),
        "delivered": len(first),
        "repeats": repeats,
        "dead": len({row.id for row in rows} & set(dead)),
        "replayed": len(set(replayed)),
    }
    return found


def _out_of_order(first: Iterable[Receipt], replayed: set[int]) -> list[str]:
    last: dict[str, Receipt] = {}
    bad = []
    for r in first:  # in the log's order
        if r.event_id in replayed:
            continue
        before = last.get(r.goods_id)
        if before is not None and r.seq < before.seq:
            bad.append(
                f"{r.goods_id}: #{r.event_id} seq {r.seq} first received after "
                f"#{before.event_id} seq {before.seq}"
            )
        if before is None or r.seq >= before.seq:
            last[r.goods_id] = r
    return bad


def verdict(judged: Judged, waited: str = "") -> Verdict:
    n = judged.numbers
    detail = (
        f"{n.get('rows', 0)} outbox rows: {n.get('delivered', 0)} delivered "
        f"({n.get('repeats', 0)} repeats dropped), {n.get('dead', 0)} dead-lettered, "
        f"{n.get('replayed', 0)} replayed; {len(judged.lost)} lost, "
        f"{len(judged.bad_signatures)} bad signatures, {len(judged.invented)} not of the outbox, "
        f"{len(judged.out_of_order)} out of seq order"
    )
    if waited:
        detail = f"{waited}; {detail}"
    bad = judged.violations
    return Verdict("W1", NAME, VIOLATED if bad else VALID, detail, bad[:LISTED])


def counts(receipts: Iterable[Receipt]) -> dict[str, Any]:
    """What the report says of the receiver's log besides the verdict."""
    seen = list(receipts)
    answered = Counter(r.status for r in seen)
    return {
        "deliveries": len(seen),
        "answered": {str(k): v for k, v in sorted(answered.items())},
        "distinct": len({r.event_id for r in seen if r.accepted}),
    }
