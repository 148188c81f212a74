"""The running state of one plan: each goods id's total level, ledger seq, seed version and
held count as the batch's members move them, one after another, and its levels per location
(places.py). The plan (plan.py) and its parts (allocating.py, transfers.py) move them."""

from __future__ import annotations

from collections.abc import Mapping

from stock_service.core.model import Entry
from stock_service.core.places import DEFAULT, Shelves


class RunningLedger:
    """The running levels, sequence numbers, seed versions and held counts of one plan."""

    def __init__(
        self,
        levels: Mapping[str, int],
        seqs: Mapping[str, int],
        versions: Mapping[str, int],
        named: Mapping[str, Mapping[str, int]] | None = None,
        named_held: Mapping[str, Mapping[str, int]] | None = None,
    ) -> None:
        self.levels = dict(levels)
        self.seqs = dict(seqs)
        self.versions = dict(versions)
        self.entries: list[Entry] = []
        self.changed: set[str] = set()
        self.held: dict[str, int] = {}
        self.seeded: dict[str, tuple[int, int]] = {}
        self.shelves = Shelves(named or {}, named_held or {}, self.levels)

    def level(self, goods_id: str) -> int:
        return self.levels.get(goods_id, 0)

    def version(self, goods_id: str) -> int:
        return self.versions.get(goods_id, 1)

    def move(
        self,
        index: int,
        goods_id: str,
        kind: str,
        delta: int,
        seeds: bool = False,
        parts: tuple[tuple[str, int], ...] | None = None,
        flag: str | None = None,
    ) -> Entry:
        """One ledger line. `seeds`: a level set outright, which starts a new seed (this line
        and those after it belong to it); a goods id brought into being starts at version 1.
        `parts`: where the units moved, (location, delta) each; none: all in the default."""
        if parts is None:
            parts = ((DEFAULT, delta),)
        for location, moved in parts:
            self.shelves.move(goods_id, location, moved)
        if seeds:
            self.versions[goods_id] = self.version(goods_id) + 1 if goods_id in self.levels else 1
        self.levels[goods_id] = self.level(goods_id) + delta
        self.seqs[goods_id] = self.seqs.get(goods_id, 0) + 1
        self.changed.add(goods_id)
        entry = Entry(
            index,
            goods_id,
            kind,
            delta,
            self.levels[goods_id],
            self.seqs[goods_id],
            self.version(goods_id),
            parts,
            flag,
        )
        self.entries.append(entry)
        if seeds:
            self.seeded[goods_id] = (entry.level_after, entry.seed_version)
        return entry

    def hold(self, goods_id: str, units: int, location: str = DEFAULT) -> None:
        self.held[goods_id] = self.held.get(goods_id, 0) + units
        self.shelves.hold(goods_id, location, units)
