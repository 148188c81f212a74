"""Backorders, as pure logic: what a goods id may owe, and who gets the units that arrive.

- A goods id's `backorder_limit` caps the units it may owe at any moment (0, the default: it
  owes none, and a deduction that stock cannot fill is refused, as it always was).
- A goods id may also cap what its lines naming one location may owe (`location_limits`:
  goods id -> location -> limit); a location without one is bound by the goods id's alone.
- A deduction that on-hand stock cannot fill whole (all or nothing) takes what there is (a
  line naming a location: what that location has) and owes the rest, when the units owed stay
  within the goods id's limit and, for a line naming a location, that location's; it waits in
  line: its place is the ledger seq of its `backordered` entry.
- Units that arrive (a restock, a return, a transfer received) go to the waiting lines of their
  goods id OLDEST FIRST, in the commit of their arrival; a line may be filled in parts. A line
  naming a location takes units at that location only; a line naming none takes units at any
  active location, in priority order. So no backordered line is handed units at a location
  while an earlier line of the same goods id that may take units there waits. A deduction of a
  goods id that owes units first hands what is on hand to the line.
- A cancel of a backordered deduction gives up its place: what it still waited for is owed no
  more (what was filled comes back, as any return).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Waiting:
    """A backordered line still owed units: its flag, goods id, place in line and what it waits
    for."""

    flag: str
    goods_id: str
    position: int
    remaining: int
    location: str | None = None  # the location its line named: it takes units there only


@dataclass(frozen=True)
class Bound:
    """The limit that refused a backorder: the goods id's (`location` None) or its location's,
    and the units owed then."""

    goods_id: str
    location: str | None
    limit: int
    owed: int


@dataclass
class Backorders:
    """The running backorder state of one plan: each goods id's limit and units owed, and its
    waiting lines in order; what the plan changes of them."""

    limits: Mapping[str, int]
    owed: dict[str, int]
    waiting: dict[str, list[Waiting]]
    new: list[Waiting] = field(default_factory=list)  # lines that start waiting now
    filled: dict[tuple[str, str], int] = field(default_factory=dict)  # (flag, goods) -> units
    cancelled: dict[tuple[str, str], int] = field(default_factory=dict)  # gave up, waiting for
    # (flag, goods) -> the goods id's last ledger seq when the line gave up its place
    gave_up_after: dict[tuple[str, str], int] = field(default_factory=dict)
    # goods id -> location -> the units its lines naming that location may owe at once
    location_limits: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        limits: Mapping[str, int],
        owed: Mapping[str, int],
        waiting: Mapping[str, Sequence[Waiting]],
        location_limits: Mapping[str, Mapping[str, int]] | None = None,
    ) -> Backorders:
        lines = {g: sorted(w, key=lambda x: x.position) for g, w in waiting.items()}
        return cls(limits, dict(owed), lines, location_limits=location_limits or {})

    def owed_at(self, goods_id: str, location: str) -> int:
        """The units the goods id's lines naming this location still wait for."""
        return sum(w.remaining for w in self.waiting.get(goods_id, []) if w.location == location)

    def bound(
        self, short: Mapping[str, int], locations: Mapping[str, str] | None = None
    ) -> Bound | None:
        """The first limit owing these units (goods id -> units; `locations`: the location a
        goods id's line names) would pass, by goods id: its location's, then its own; None
        when every one stays within."""
        for g, n in sorted(short.items()):
            if n <= 0:
                continue
            where = (locations or {}).get(g)
            capped = self.location_limits.get(g, {})
            if where is not None and where in capped:
                at = self.owed_at(g, where)
                if at + n > capped[where]:
                    return Bound(g, where, capped[where], at)
            if self.owed.get(g, 0) + n > self.limits.get(g, 0):
                return Bound(g, None, self.limits.get(g, 0), self.owed.get(g, 0))
        return None

    def room(self, short: Mapping[str, int], locations: Mapping[str, str] | None = None) -> bool:
        """Whether owing these units keeps every goods id within its limit, and every line
        naming a location within that location's."""
        return self.bound(short, locations) is None

    def owes(self, goods_id: str) -> bool:
        return bool(self.waiting.get(goods_id))

    def wait(
        self, flag: str, goods_id: str, position: int, units: int, location: str | None = None
    ) -> None:
        line = Waiting(flag, goods_id, position, units, location)
        self.waiting.setdefault(goods_id, []).append(line)
        self.owed[goods_id] = self.owed.get(goods_id, 0) + units
        self.new.append(line)

    def serve(
        self, goods_id: str, on_hand: dict[str, int], order: Sequence[str]
    ) -> list[tuple[str, tuple[tuple[str, int], ...]]]:
        """What is on hand (location -> units, moved here) given to the waiting lines oldest
        first: (flag, ((location, units), ...)) per line served. A line naming a location takes
        units there only (none if it is not in `order`, the active locations); a line naming
        none takes them from `order`, best first. A later line is handed units at a location
        only when no earlier line still waiting may take units there."""
        served: list[tuple[str, tuple[tuple[str, int], ...]]] = []
        kept: list[Waiting] = []
        for first in self.waiting.get(goods_id, []):
            usable = [first.location] if first.location is not None else list(order)
            parts: list[tuple[str, int]] = []
            need = first.remaining
            for loc in usable:
                take = min(need, on_hand.get(loc, 0))
                if take:
                    parts.append((loc, take))
                    on_hand[loc] -= take
                    need -= take
            took = first.remaining - need
            if took:
                served.append((first.flag, tuple(parts)))
                self.owed[goods_id] -= took
                key = (first.flag, goods_id)
                self.filled[key] = self.filled.get(key, 0) + took
            if need:
                kept.append(replace(first, remaining=need))
        if goods_id in self.waiting:
            self.waiting[goods_id] = kept
        return served

    def give_up(self, flag: str, goods_id: str, after: int = 0) -> int:
        """A cancelled backordered line leaves the line, after the goods id's ledger entry of
        seq `after`: the units it still waited for."""
        line = self.waiting.get(goods_id, [])
        for i, w in enumerate(line):
            if w.flag == flag:
                del line[i]
                self.owed[goods_id] -= w.remaining
                self.cancelled[(flag, goods_id)] = w.remaining
                self.gave_up_after[(flag, goods_id)] = after
                return w.remaining
        return 0
