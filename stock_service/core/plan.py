"""The read-check-write of a batch of deductions and returns, as pure logic: no database, no
lock.

Combining (coordination/combining.py) serves the requests that queued for one lock in one lock hold.
Under that hold the store reads the levels and the decided flags once, and `plan` decides
every request in arrival order against the levels the earlier ones left, exactly as if they had
run one at a time in that order:

- a deduction whose flag the stock database has decided is answered with that decision and
  changes nothing (shared/contract.py's AS_DEDUCTION): `duplicate` when it was deducted (by an
  earlier attempt, or an earlier request of this batch), `insufficient` when it was refused,
  `voided` when it was voided, `cancelled` when it was deducted and its stock returned;
- a deduction whose every line fits is `deducted` and lowers the running levels;
- a deduction with a line that does not fit is `insufficient`, with the shortfall of each such
  line against the running level, and changes no level (all or nothing per request); its flag
  is decided `refused`, recorded in the same commit as the batch's deductions: the buyer is
  told no, so no attempt of that flag may ever deduct, whatever comes back to the shelf later
  (an attempt that passed the Redis check before the refusal and reaches the lock afterwards
  finds the decision);
- a return (the stock of a cancelled order coming back) of a deducted flag is `returned` and
  raises the running levels by exactly the flag's flows (its lines); of a flag returned before,
  `returned` again and nothing changes (nothing is returned twice); of a flag with no deduction,
  `voided` (the caller voids the flag first: a deduction arriving later is refused).

Levels only go down inside a batch but for returns, so a deduction refused here could not fit
at the end of the batch either, unless a return came after it.

A member's answer depends on its own request and the levels the members before it left, never
on a member that changed no level: a request refused (for stock, a stale expected level, a
level it would take below zero or above the cap), or one that cannot fit, leaves every other
answer as it would be without it (tests/unit/test_combiner_properties.py holds that against
generated batches with oversized and refused neighbours).

An adjustment of reason `set` starts a new seed of its goods id: the entries and refusals of
the members after it carry the new seed version, and the seed keeps the level the `set` left,
not the level at the end of the batch (a checker reads refusals by the version they name).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from shared.contract import AS_DEDUCTION, Decided, Outcome
from stock_service.core.model import (
    REASONS,
    Adjustment,
    Decision,
    Entry,
    Kind,
    Request,
    Shortfall,
)

__all__ = [
    "REASONS",
    "Adjustment",
    "Decision",
    "Entry",
    "Kind",
    "Outcome",
    "Plan",
    "Request",
    "Shortfall",
    "plan",
]


@dataclass
class Plan:
    decisions: list[Decision]  # one per request, in the batch's order
    levels: dict[str, int]  # the level of every goods id after the batch
    changed: set[str]  # goods ids whose level the plan moves
    returned: set[int] = field(default_factory=set)  # the requests that return stock now
    refused: set[int] = field(default_factory=set)  # the requests refused now (recorded)
    entries: list[Entry] = field(default_factory=list)  # the ledger lines, in order
    seqs: dict[str, int] = field(default_factory=dict)  # each changed goods id's last seq
    held: dict[str, int] = field(default_factory=dict)  # the change of each held count
    created: set[str] = field(default_factory=set)  # goods ids a `set` brings into being
    # goods ids set outright (a new seed): the level the last `set` left and its version
    seeded: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def writes(self) -> bool:
        """Whether the plan has anything to commit: a level, a flow, a return, a refusal."""
        return bool(self.changed or self.refused or self.created)

    def deducted(self, requests: Iterable[Request]) -> list[Request]:
        return [
            request
            for request, decision in zip(requests, self.decisions, strict=True)
            if decision.outcome is Outcome.DEDUCTED
        ]

    def returning(self, requests: Iterable[Request]) -> list[Request]:
        return [request for i, request in enumerate(requests) if i in self.returned]

    def refusing(self, requests: Iterable[Request]) -> list[tuple[Request, Decision]]:
        return [
            (request, self.decisions[i]) for i, request in enumerate(requests) if i in self.refused
        ]


class _Ledger:
    """The running levels, sequence numbers, seed versions and held counts of one plan."""

    def __init__(
        self, levels: Mapping[str, int], seqs: Mapping[str, int], versions: Mapping[str, int]
    ) -> None:
        self.levels = dict(levels)
        self.seqs = dict(seqs)
        self.versions = dict(versions)
        self.entries: list[Entry] = []
        self.changed: set[str] = set()
        self.held: dict[str, int] = {}
        self.seeded: dict[str, tuple[int, int]] = {}

    def level(self, goods_id: str) -> int:
        return self.levels.get(goods_id, 0)

    def version(self, goods_id: str) -> int:
        return self.versions.get(goods_id, 1)

    def move(self, index: int, goods_id: str, kind: str, delta: int, seeds: bool = False) -> Entry:
        """One ledger line. `seeds`: a level set outright, which starts a new seed (this line
        and those after it belong to it); a goods id brought into being starts at version 1."""
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
        )
        self.entries.append(entry)
        if seeds:
            self.seeded[goods_id] = (entry.level_after, entry.seed_version)
        return entry

    def hold(self, goods_id: str, units: int) -> None:
        self.held[goods_id] = self.held.get(goods_id, 0) + units


def plan(
    requests: list[Request],
    levels: Mapping[str, int],
    decided: Mapping[str, str],
    seqs: Mapping[str, int] | None = None,
    held_flags: frozenset[str] = frozenset(),
    seed_versions: Mapping[str, int] | None = None,
    max_level: int | None = None,
) -> Plan:
    """`levels`: the level of each known goods id (a missing id has none to give; a `set`
    brings it into being); `decided`: the flags the stock database has decided, with their
    decision; `seqs`: each goods id's last ledger entry; `held_flags`: the deducted flags whose
    units are still held (an unpaid hold), released when their stock comes back;
    `seed_versions`: each known goods id's seed version; `max_level`: the highest level an
    adjustment may leave (MAX_STOCK_LEVEL)."""
    ledger = _Ledger(levels, seqs or {}, seed_versions or {})
    taken = {flag: Decided(outcome) for flag, outcome in decided.items()}
    returned: set[int] = set()
    refused: set[int] = set()
    created: set[str] = set()
    decisions = []
    for index, request in enumerate(requests):
        if request.adjust is not None:
            decision = _adjust(index, request.adjust, ledger, max_level)
            adjusted = decision.outcome is Outcome.ADJUSTED
            if (
                adjusted
                and request.adjust.reason == "set"
                and request.adjust.goods_id not in levels
            ):
                created.add(request.adjust.goods_id)
            decisions.append(decision)
            continue
        earlier = taken.get(request.flag)
        if request.kind is Kind.RETURN:
            decision = Decision(Outcome.RETURNED if earlier is not None else Outcome.VOIDED)
            if earlier is Decided.DEDUCTED:
                for goods_id, num in sorted(request.lines.items()):
                    decision.entries.append(ledger.move(index, goods_id, "returned", num))
                    if request.flag in held_flags:
                        ledger.hold(goods_id, -num)
                taken[request.flag] = Decided.RETURNED
                returned.add(index)
            elif earlier is not Decided.RETURNED:
                decision.outcome = Outcome.VOIDED
            decisions.append(decision)
            continue
        if earlier is not None:
            decisions.append(Decision(AS_DEDUCTION[earlier]))
            continue
        short = [
            Shortfall(
                goods_id,
                wanted,
                ledger.level(goods_id),
                ledger.version(goods_id) if goods_id in ledger.levels else None,
            )
            for goods_id, wanted in sorted(request.lines.items())
            if ledger.level(goods_id) < wanted
        ]
        if short:
            taken[request.flag] = Decided.REFUSED
            refused.add(index)
            decisions.append(Decision(Outcome.INSUFFICIENT, short))
            continue
        decision = Decision(Outcome.DEDUCTED)
        for goods_id, wanted in sorted(request.lines.items()):
            decision.entries.append(ledger.move(index, goods_id, "deducted", -wanted))
            if request.hold:
                ledger.hold(goods_id, wanted)
        taken[request.flag] = Decided.DEDUCTED
        decisions.append(decision)
    return Plan(
        decisions,
        ledger.levels,
        ledger.changed,
        returned,
        refused,
        ledger.entries,
        {g: ledger.seqs[g] for g in ledger.changed},
        ledger.held,
        created,
        ledger.seeded,
    )


def _adjust(index: int, adjustment: Adjustment, ledger: _Ledger, max_level: int | None) -> Decision:
    """An adjustment against the running level: stale if the level is not the one expected,
    refused if it would take the level below zero or above `max_level` (two restocks that
    each fit would otherwise leave a level no later `set` or compare-and-swap could name),
    else one ledger line (a delta of 0 too)."""
    level = ledger.level(adjustment.goods_id)
    if adjustment.expected is not None and adjustment.expected != level:
        return Decision(Outcome.STALE, level=level)
    delta = adjustment.delta if adjustment.delta is not None else (adjustment.num or 0) - level
    if level + delta < 0:
        return Decision(Outcome.BELOW_ZERO, level=level)
    if max_level is not None and level + delta > max_level:
        return Decision(Outcome.ABOVE_MAX, level=level)
    seeds = adjustment.reason == "set"
    entry = ledger.move(index, adjustment.goods_id, "adjusted", delta, seeds)
    return Decision(Outcome.ADJUSTED, level=entry.level_after, entries=[entry])
