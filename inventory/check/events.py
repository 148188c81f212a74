"""I10, stock events: what a consumer of the Redis Stream gets, against the outbox and
the levels, as a pure function of plain data (events_source.py reads it from a stack).

A consumer reads the stream in order and drops the repeats of an event by its `id` (the
relay's delivery is at least once). What it keeps must be:

- every outbox row of the scope exactly once: none lost (an outbox row with no entry), none
  invented (an entry whose id is no outbox row's: a second event of the same goods id and seq
  under another id is one), each copy equal to its row (goods id, seq, kind, delta, level);
- in ledger order per goods id: the first copies of a goods id's events come with growing ids
  (ids grow with a goods id's ledger, stock_service/storage/tables.py) and never a lower seq;
- replaying the levels: from level 0 before seq 1 (or, for a goods id whose ledger began
  before the outbox, from where its outbox starts), each entry (deducted, returned, adjusted) is the
  next seq and its level is the level before plus its delta; each threshold event
  (low_stock, out_of_stock, back_in_stock) tells the level its entry left; the last event of a
  goods id is the stock row's last entry (`ledger_seq`) and level.

The scope is what the caller read: the outbox rows and stock rows of a goods prefix, and the
stream entries of the same goods ids, all read on a quiet scope once the relay has sent every
row (a row not sent is a violation here: the caller waited for it, events_source.py). The
stream must not have been trimmed past the scope's first event (STOCK_EVENTS_MAXLEN).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

from inventory.check.result import CheckResult

# A ledger entry: it moves the level (a transfer's legs too: units in transit are out of it; a
# hand-over to a backordered line; a line starting to wait is an entry of delta 0).
ENTRY_KINDS = (
    "deducted",
    "returned",
    "adjusted",
    "transfer_out",
    "transfer_in",
    "backordered",
    "backorder_filled",
)
FIELDS = ("goodsId", "seq", "kind", "delta", "level")  # compared with the outbox row
NAME = "stock events: each outbox row once, in ledger order, replaying the levels"
SHOWN = 3  # examples in the one-line detail (the numbers keep up to LISTED)
LISTED = 20


@dataclass(frozen=True)
class OutboxRow:
    """One row of stock_outbox, as the check needs it."""

    id: int
    goods_id: str
    seq: int
    kind: str
    delta: int
    level: int
    sent: bool = True

    def fields(self) -> dict[str, str]:
        """What the relay writes of it to the stream (stock_service/ledger/relay.py's
        event_fields)."""
        return {
            "id": str(self.id),
            "goodsId": self.goods_id,
            "seq": str(self.seq),
            "kind": self.kind,
            "delta": str(self.delta),
            "level": str(self.level),
        }


@dataclass(frozen=True)
class Event:
    """The first copy of an event in the stream: its stream entry id, and its fields parsed."""

    entry: str
    id: int
    goods_id: str
    seq: int
    kind: str
    delta: int
    level: int

    def name(self) -> str:
        return f"event #{self.id} ({self.goods_id} seq {self.seq} {self.kind}, entry {self.entry})"


def check_events(
    outbox: Iterable[OutboxRow],
    stream: Iterable[tuple[str, Mapping[str, str]]],
    levels: Mapping[str, tuple[int, int]],
) -> CheckResult:
    """`outbox`: the scope's rows; `stream`: its stream entries in stream order, (entry id,
    fields); `levels`: goods id -> (final level, its last ledger seq)."""
    rows = {row.id: row for row in outbox}
    events, repeats, problems = first_copies(stream, rows)
    problems["unsent"] = [
        f"#{r.id} ({r.goods_id} seq {r.seq})" for r in rows.values() if not r.sent
    ]
    kept = {e.id for e in events}
    problems["lost"] = [
        f"#{r.id} ({r.goods_id} seq {r.seq} {r.kind})"
        for r in sorted(rows.values(), key=lambda r: r.id)
        if r.id not in kept
    ]
    by_goods: dict[str, list[Event]] = defaultdict(list)
    for event in events:
        by_goods[event.goods_id].append(event)
    problems["out_of_order"] = out_of_order(by_goods)
    problems["not_replaying"] = not_replaying(by_goods, rows.values(), levels)
    bad = {k: v for k, v in problems.items() if v}
    detail = (
        f"{len(rows)} outbox rows of {len(levels)} goods, {len(events) + repeats} stream "
        f"entries, {repeats} repeats dropped"
    )
    detail += "; " + "; ".join(_few(k, v) for k, v in bad.items()) if bad else ": each once"
    return CheckResult(
        "I10",
        NAME,
        not bad,
        detail,
        {
            "outbox_rows": len(rows),
            "events": len(events),
            "repeats": repeats,
            **{k: v[:LISTED] for k, v in problems.items()},
        },
    )


def first_copies(
    stream: Iterable[tuple[str, Mapping[str, str]]], rows: Mapping[int, OutboxRow]
) -> tuple[list[Event], int, dict[str, list[str]]]:
    """The events a consumer keeps (the first copy of each id, in stream order), how many
    repeats it dropped, and what is wrong with the entries themselves."""
    problems: dict[str, list[str]] = {"malformed": [], "invented": [], "altered": []}
    seen: dict[int, Mapping[str, str]] = {}
    events: list[Event] = []
    repeats = 0
    for entry, fields in stream:
        try:
            event = Event(
                entry,
                int(fields["id"]),
                fields["goodsId"],
                int(fields["seq"]),
                fields["kind"],
                int(fields["delta"]),
                int(fields["level"]),
            )
        except (KeyError, ValueError) as exc:
            problems["malformed"].append(f"entry {entry}: {exc!r}")
            continue
        if event.id in seen:
            repeats += 1
            # A repeat is the relay sending the same row again: anything else is not a repeat.
            if _differs(fields, seen[event.id]):
                problems["altered"].append(f"{event.name()}: a repeat unlike its first copy")
            continue
        seen[event.id] = fields
        events.append(event)
        row = rows.get(event.id)
        if row is None:
            problems["invented"].append(f"{event.name()}: no outbox row has its id")
        elif _differs(fields, row.fields()):
            problems["altered"].append(f"{event.name()}: its row says {row.fields()}")
    return events, repeats, problems


def out_of_order(by_goods: Mapping[str, Sequence[Event]]) -> list[str]:
    """Per goods id, the first copies after one with a higher id or a higher seq."""
    found = []
    for events in by_goods.values():
        for before, event in pairwise(events):
            if event.id <= before.id or event.seq < before.seq:
                found.append(f"{event.name()} after #{before.id} (seq {before.seq})")
    return found


def not_replaying(
    by_goods: Mapping[str, Sequence[Event]],
    rows: Iterable[OutboxRow],
    levels: Mapping[str, tuple[int, int]],
) -> list[str]:
    """The events whose seq or level does not follow from the ones before, and the goods ids
    whose events do not end at their stock row's last entry and level."""
    # goods -> (seq, level) before its first event: nothing before seq 1; a goods id whose
    # ledger began before the outbox (an older stock database) starts where its outbox does.
    start: dict[str, tuple[int, int]] = {}
    for row in sorted(rows, key=lambda r: r.id):
        if row.kind in ENTRY_KINDS and row.goods_id not in start and row.seq > 1:
            start[row.goods_id] = (row.seq - 1, row.level - row.delta)
        start.setdefault(row.goods_id, (0, 0))
    found = []
    for goods in sorted(set(by_goods) | set(levels)):
        seq, level = start.get(goods, (0, 0))
        for e in by_goods.get(goods, []):
            # An entry moves the level by its delta; a threshold event tells the level its
            # entry left, and moves nothing.
            want = (seq + 1, level + e.delta) if e.kind in ENTRY_KINDS else (seq, level)
            if (e.seq, e.level) != want or (e.kind not in ENTRY_KINDS and e.delta != 0):
                found.append(f"{e.name()}: level {e.level}, replayed seq {want[0]} level {want[1]}")
            seq, level = e.seq, e.level  # go on from what it says: one fault, one finding
        if goods not in levels:
            found.append(f"{goods}: events but no stock row")
        elif (seq, level) != (levels[goods][1], levels[goods][0]):
            final, last = levels[goods]
            found.append(
                f"{goods}: events end at seq {seq} level {level}, the stock row at seq "
                f"{last} level {final}"
            )
    return found


def _differs(fields: Mapping[str, str], other: Mapping[str, str]) -> bool:
    return any(fields.get(k) != other.get(k) for k in FIELDS)


def _few(kind: str, found: list[str]) -> str:
    more = f" (+{len(found) - SHOWN} more)" if len(found) > SHOWN else ""
    return f"{len(found)} {kind.replace('_', ' ')}: " + ", ".join(found[:SHOWN]) + more
