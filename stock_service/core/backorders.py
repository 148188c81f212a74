"""Backorders, as pure logic: what a goods id may owe, and who gets the units that arrive.

- A goods id's `backorder_limit` caps the units it may owe at any moment (0, the default: it
  owes none, and a deduction that stock cannot fill is refused, as it always was).
- A deduction that on-hand stock cannot fill whole (all or nothing, no named location) takes
  what there is and owes the rest, when the units owed stay within the limit; it waits in line:
  its place is the ledger seq of its `backordered` entry.
- Units that arrive (a restock, a return, a transfer received) go to the waiting lines of their
  goods id OLDEST FIRST, in the commit of their arrival; a line may be filled in parts. So no
  backordered line is filled, in whole or in part, while an earlier one of the same goods id
  waits (the arriving units could serve it: they are the same goods, and a line takes any
  units). A deduction of a goods id that owes units first hands what is on hand to the line.
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

    @classmethod
    def of(
        cls,
        limits: Mapping[str, int],
        owed: Mapping[str, int],
        waiting: Mapping[str, Sequence[Waiting]],
    ) -> Backorders:
        lines = {g: sorted(w, key=lambda x: x.position) for g, w in waiting.items()}
        return cls(limits, dict(owed), lines)

    def room(self, short: Mapping[str, int]) -> bool:
        """Whether owing these units (goods id -> units) keeps every goods id within its limit."""
        return all(
            self.owed.get(g, 0) + n <= self.limits.get(g, 0) for g, n in short.items() if n > 0
        )

    def owes(self, goods_id: str) -> bool:
        return bool(self.waiting.get(goods_id))

    def wait(self, flag: str, goods_id: str, position: int, units: int) -> None:
        line = Waiting(flag, goods_id, position, units)
        self.waiting.setdefault(goods_id, []).append(line)
        self.owed[goods_id] = self.owed.get(goods_id, 0) + units
        self.new.append(line)

    def serve(self, goods_id: str, units: int) -> list[tuple[str, int]]:
        """Arriving units given to the waiting lines oldest first: (flag, units) per line
        served. A later line gets nothing while an earlier one still waits."""
        served: list[tuple[str, int]] = []
        line = self.waiting.get(goods_id, [])
        while units > 0 and line:
            first = line[0]
            take = min(units, first.remaining)
            units -= take
            served.append((first.flag, take))
            self.owed[goods_id] -= take
            key = (first.flag, goods_id)
            self.filled[key] = self.filled.get(key, 0) + take
            if take == first.remaining:
                line.pop(0)
            else:
                line[0] = replace(first, remaining=first.remaining - take)
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
