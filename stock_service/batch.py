"""The read-check-write of a batch of deductions, as pure logic: no database, no lock.

Combining (stock_service/combining.py) serves the requests that queued for one lock in one lock
hold. Under that hold the store reads the levels once, and `plan` decides every request in
arrival order against the levels the earlier ones left, exactly as if they had run one at a
time in that order:

- a flag that already has flows, or that an earlier request of the batch carries, is a
  `duplicate` and changes nothing;
- a request whose every line fits is `deducted` and lowers the running levels;
- a request with a line that does not fit is `insufficient`, with the shortfall of each such
  line against the running level, and changes nothing (all or nothing per request).

Levels only go down inside a batch, so a request refused here could not fit at the end either.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


class Outcome(enum.StrEnum):
    DEDUCTED = "deducted"
    DUPLICATE = "duplicate"
    INSUFFICIENT = "insufficient"


@dataclass(frozen=True)
class Shortfall:
    goods_id: str
    requested: int
    available: int
    # The seed version of the level it was refused against (set by the store): a checker
    # tells a lost sale from a refusal before the goods was seeded again.
    seed_version: int | None = None


@dataclass(frozen=True)
class Request:
    """One PUT /reduceStock: the operation flag and the quantity per goods id."""

    flag: str
    lines: Mapping[str, int]


@dataclass
class Decision:
    outcome: Outcome
    shortfalls: list[Shortfall] = field(default_factory=list)


@dataclass
class Plan:
    decisions: list[Decision]  # one per request, in the batch's order
    levels: dict[str, int]  # the level of every goods id after the deducted requests
    changed: set[str]  # goods ids whose level the plan lowers

    def deducted(self, requests: Iterable[Request]) -> list[Request]:
        return [
            request
            for request, decision in zip(requests, self.decisions, strict=True)
            if decision.outcome is Outcome.DEDUCTED
        ]


def plan(requests: list[Request], levels: Mapping[str, int], flags_with_flows: set[str]) -> Plan:
    """`levels`: the level of each known goods id (a missing id has none to give);
    `flags_with_flows`: the flags already deducted, as the stock-flow table says."""
    running = dict(levels)
    taken: set[str] = set(flags_with_flows)
    changed: set[str] = set()
    decisions = []
    for request in requests:
        if request.flag in taken:
            decisions.append(Decision(Outcome.DUPLICATE))
            continue
        short = [
            Shortfall(goods_id, wanted, running.get(goods_id, 0))
            for goods_id, wanted in sorted(request.lines.items())
            if running.get(goods_id, 0) < wanted
        ]
        if short:
            decisions.append(Decision(Outcome.INSUFFICIENT, short))
            continue
        for goods_id, wanted in request.lines.items():
            running[goods_id] -= wanted
            changed.add(goods_id)
        taken.add(request.flag)
        decisions.append(Decision(Outcome.DEDUCTED))
    return Plan(decisions, running, changed)
