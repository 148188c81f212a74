"""Backorders as the checks read them (docs/backorders.md), from the stock database, for the goods
ids of a prefix: every line that waited (table `backorder`: its place in line is its ledger seq,
`position`; the units it owed then, `wanted`; its state), every hand-over (`backorder_fill`: a
ledger line of its seq and units), every give-up (a line `cancelled`: at the seq of its flag's
return row of that goods id, or, when the return gave back nothing and so wrote no ledger line,
just after the seq it recorded, `gave_up_after`; a line cancelled before that column has
neither, and its place is only known by time: when its line last moved, `updated_at`), each
goods id's limit, and its locations' limits (`backorder_location_limit`). A line records the
location it named (`location`, none: any), and a hand-over where its units were taken
(`backorder_fill.location`: `north:3,south:2`).

Two checks, each a pure function of what was read:

B1 the cap at every entry of the ledger: replaying a goods id's ledger in seq order, the units
   it owes never pass its backorder limit (stock.backorder_limit, which a chaos run never
   changes after setting it). Owed units rise only at a `backordered` entry (a line starts
   waiting) and fall at hand-overs and give-ups, so the cap is checked after every
   backordered entry, and every entry is checked to owe no line more than it wanted and never
   below zero. Per location too: after every backordered entry of a line naming a location
   with a limit, the units owed by the lines naming that location never pass it.
   Conservatively: a give-up whose place is unknown counts as done before a line only when its
   line last moved strictly before that line was written (`updated_at` < `created_at`):
   otherwise still owed.
B2 fill order (fairness, per location): no hand-over of units at a location serves a line
   while an earlier line (smaller position) of the same goods id that may take units there
   (naming that location, or naming none) still waits at its seq: not filled (its hand-overs
   before that seq short of what it wanted) and not given up before it; and a line naming a
   location is handed units there only. A hand-over whose locations are unknown (none
   recorded) counts as taken at every location. A give-up of unknown place counts as done
   before a hand-over when its line last moved at or before the hand-over's time (no false
   alarm when both were in one batch, where a cancel is read before an arrival).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Engine, select

from inventory.check.result import CheckResult
from stock_service.core import parts_of
from stock_service.storage.tables import (
    backorder,
    backorder_fill,
    backorder_location_limit,
    stock,
    stock_return,
)

CANCELLED = "cancelled"


@dataclass(frozen=True)
class Waited:
    """One backordered line."""

    flag: str
    position: int
    wanted: int
    state: str  # waiting, filled, cancelled
    created_at: datetime
    updated_at: datetime
    gave_up: int | None = None  # the seq of its return, when cancelled and a return was written
    gave_up_after: int | None = None  # cancelled: the goods id's last seq when it gave up
    location: str | None = None  # the location its line named: handed units there only

    def may_take(self, at: tuple[str, ...]) -> bool:
        """Whether it may take units at any of these locations (none given: anywhere)."""
        return self.location is None or not at or self.location in at


@dataclass(frozen=True)
class Handed:
    flag: str
    seq: int
    num: int
    created_at: datetime
    at: tuple[str, ...] = ()  # where its units were taken (none recorded: unknown)


@dataclass
class Backorders:
    limits: dict[str, int] = field(default_factory=dict)  # goods -> backorder_limit
    lines: dict[str, list[Waited]] = field(default_factory=dict)  # goods -> by position
    fills: dict[str, list[Handed]] = field(default_factory=dict)  # goods -> by seq
    # goods -> location -> the units its lines naming that location may owe at once
    location_limits: dict[str, dict[str, int]] = field(default_factory=dict)


def read_backorders(engine: Engine, prefix: str) -> Backorders:
    like = f"{prefix}%"
    found = Backorders()
    b, f, r, s = backorder.c, backorder_fill.c, stock_return.c, stock.c
    with engine.connect() as conn:
        for row in conn.execute(select(s.goods_id, s.backorder_limit).where(s.goods_id.like(like))):
            found.limits[row.goods_id] = int(row.backorder_limit)
        capped = backorder_location_limit.c
        query = select(capped.goods_id, capped.location_id, capped.backorder_limit)
        for goods_id, location_id, limit in conn.execute(query.where(capped.goods_id.like(like))):
            found.location_limits.setdefault(goods_id, {})[location_id] = int(limit)
        returns = {
            (row.flag, row.goods_id): row.seq
            for row in conn.execute(
                select(r.flag, r.goods_id, r.seq).where(
                    r.goods_id.like(like), r.flag.in_(select(b.flag).where(b.goods_id.like(like)))
                )
            )
        }
        lines: dict[str, list[Waited]] = defaultdict(list)
        for row in conn.execute(select(backorder).where(b.goods_id.like(like))):
            seq = returns.get((row.flag, row.goods_id)) if row.state == CANCELLED else None
            lines[row.goods_id].append(
                Waited(
                    row.flag,
                    int(row.position),
                    int(row.wanted),
                    row.state,
                    row.created_at,
                    row.updated_at,
                    None if seq is None else int(seq),
                    None if row.gave_up_after is None else int(row.gave_up_after),
                    row.location,
                )
            )
        fills: dict[str, list[Handed]] = defaultdict(list)
        query = select(f.flag, f.goods_id, f.seq, f.num, f.created_at, f.location)
        for h in conn.execute(query.where(f.goods_id.like(like))):
            at = tuple(loc for loc, _ in parts_of(h.location)) if h.location else ()
            fills[h.goods_id].append(Handed(h.flag, int(h.seq), int(h.num), h.created_at, at))
    found.lines = {g: sorted(ls, key=lambda w: w.position) for g, ls in lines.items()}
    found.fills = {g: sorted(fs, key=lambda h: h.seq) for g, fs in fills.items()}
    return found


def _gave_up_before(line: Waited, seq: int, at: datetime, strict: bool) -> bool:
    """Whether `line` gave up its place before the entry at `seq` (written at `at`)."""
    if line.state != CANCELLED:
        return False
    if line.gave_up is not None:
        return line.gave_up < seq
    if line.gave_up_after is not None:
        return line.gave_up_after < seq
    return line.updated_at < at if strict else line.updated_at <= at


def check_cap(data: Backorders) -> CheckResult:
    """B1 (see the module's doc)."""
    bad: list[str] = []
    checked = peak_seen = 0
    for goods, lines in data.lines.items():
        limit = data.limits.get(goods, 0)
        capped = data.location_limits.get(goods, {})
        fills = data.fills.get(goods, [])
        wanted = {w.flag: w.wanted for w in lines}
        for line in lines:
            owed = at_line = 0
            for other in lines:
                if other.position > line.position:
                    break
                if _gave_up_before(other, line.position, line.created_at, strict=True):
                    continue
                got = sum(h.num for h in fills if h.flag == other.flag and h.seq < line.position)
                owed += other.wanted - got
                if line.location is not None and other.location == line.location:
                    at_line += other.wanted - got
            checked += 1
            peak_seen = max(peak_seen, owed)
            if owed > limit:
                bad.append(f"{goods} seq {line.position}: owes {owed}, limit {limit}")
            if line.location in capped and at_line > capped[line.location]:
                bad.append(
                    f"{goods} seq {line.position}: owes {at_line} at {line.location}, "
                    f"its limit {capped[line.location]}"
                )
        handed: dict[str, int] = defaultdict(int)
        for h in fills:
            handed[h.flag] += h.num
            if h.flag not in wanted or handed[h.flag] > wanted[h.flag]:
                bad.append(
                    f"{goods} seq {h.seq}: {h.flag} handed {handed[h.flag]}, "
                    f"wanted {wanted.get(h.flag, 'nothing')}"
                )
    return CheckResult(
        "B1",
        "backorders within the caps at every entry (the goods id's, each location's)",
        not bad,
        f"{checked} backordered entries of {len(data.lines)} goods ids replayed, the most owed "
        f"{peak_seen}; {len(bad)} past the limit or handed more than owed",
        {"entries": checked, "most_owed": peak_seen, "over": bad[:20]},
    )


def check_fill_order(data: Backorders) -> CheckResult:
    """B2 (see the module's doc)."""
    bad: list[str] = []
    judged = 0
    for goods, fills in data.fills.items():
        lines = data.lines.get(goods, [])
        place = {w.flag: w.position for w in lines}
        named = {w.flag: w.location for w in lines}
        for h in fills:
            judged += 1
            mine = place.get(h.flag)
            if mine is None:
                bad.append(f"{goods} seq {h.seq}: handed {h.num} to {h.flag}, which never waited")
                continue
            where = named.get(h.flag)
            if where is not None and h.at and set(h.at) != {where}:
                bad.append(
                    f"{goods} seq {h.seq}: {h.flag}, naming {where}, handed units at "
                    f"{','.join(h.at)}"
                )
                continue
            for earlier in lines:
                if earlier.position >= mine:
                    break
                if not earlier.may_take(h.at):
                    continue  # it waits for units elsewhere: these were not for it
                got = sum(x.num for x in fills if x.flag == earlier.flag and x.seq < h.seq)
                if got >= earlier.wanted:
                    continue
                if _gave_up_before(earlier, h.seq, h.created_at, strict=False):
                    continue
                bad.append(
                    f"{goods} seq {h.seq}: {h.num} to {h.flag} (place {mine}) while "
                    f"{earlier.flag} (place {earlier.position}) waited for "
                    f"{earlier.wanted - got}"
                )
                break
    waited = sum(len(ls) for ls in data.lines.values())
    return CheckResult(
        "B2",
        "backorders filled oldest first, per location",
        not bad,
        f"{judged} hand-overs to {waited} backordered lines; {len(bad)} while an earlier "
        "line waited",
        {"handovers": judged, "lines": waited, "unfair": bad[:20]},
    )


def figures(data: Backorders) -> dict[str, int]:
    lines = [w for ls in data.lines.values() for w in ls]
    return {
        "lines": len(lines),
        "filled": sum(w.state == "filled" for w in lines),
        "waiting": sum(w.state == "waiting" for w in lines),
        "cancelled": sum(w.state == CANCELLED for w in lines),
        "handovers": sum(len(fs) for fs in data.fills.values()),
        "units_handed": sum(h.num for fs in data.fills.values() for h in fs),
    }
