"""The read-check-write of a batch of deductions and returns, as pure logic: no database, no
lock.

Combining (shared/combining.py) serves the requests that queued for one lock in one lock hold.
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
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from shared.contract import AS_DEDUCTION, Decided, Outcome


class Kind(enum.StrEnum):
    DEDUCT = "deduct"
    RETURN = "return"


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
    """One PUT /reduceStock (the operation flag and the quantity per goods id), or one return
    of a flag's stock (its lines: the flag's flows, read before the hold)."""

    flag: str
    lines: Mapping[str, int]
    kind: Kind = Kind.DEDUCT


@dataclass
class Decision:
    outcome: Outcome
    shortfalls: list[Shortfall] = field(default_factory=list)
    # The stock-flow rows a deduction committed (set once committed): the same rows GET
    # /stockFlow/{flag} returns, so the answer can carry them.
    flows: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Plan:
    decisions: list[Decision]  # one per request, in the batch's order
    levels: dict[str, int]  # the level of every goods id after the deducted requests
    changed: set[str]  # goods ids whose level the plan lowers
    returned: set[int] = field(default_factory=set)  # the requests that return stock now
    refused: set[int] = field(default_factory=set)  # the requests refused now (recorded)

    @property
    def writes(self) -> bool:
        """Whether the plan has anything to commit: a level, a flow, a return, a refusal."""
        return bool(self.changed or self.refused)

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


def plan(requests: list[Request], levels: Mapping[str, int], decided: Mapping[str, str]) -> Plan:
    """`levels`: the level of each known goods id (a missing id has none to give);
    `decided`: the flags the stock database has decided, with their decision."""
    running = dict(levels)
    taken = {flag: Decided(outcome) for flag, outcome in decided.items()}
    changed: set[str] = set()
    returned: set[int] = set()
    refused: set[int] = set()
    decisions = []
    for index, request in enumerate(requests):
        earlier = taken.get(request.flag)
        if request.kind is Kind.RETURN:
            if earlier is Decided.DEDUCTED:
                for goods_id, num in request.lines.items():
                    running[goods_id] = running.get(goods_id, 0) + num
                    changed.add(goods_id)
                taken[request.flag] = Decided.RETURNED
                returned.add(index)
            decisions.append(
                Decision(
                    Outcome.RETURNED
                    if earlier in (Decided.DEDUCTED, Decided.RETURNED)
                    else Outcome.VOIDED
                )
            )
            continue
        if earlier is not None:
            decisions.append(Decision(AS_DEDUCTION[earlier]))
            continue
        short = [
            Shortfall(goods_id, wanted, running.get(goods_id, 0))
            for goods_id, wanted in sorted(request.lines.items())
            if running.get(goods_id, 0) < wanted
        ]
        if short:
            taken[request.flag] = Decided.REFUSED
            refused.add(index)
            decisions.append(Decision(Outcome.INSUFFICIENT, short))
            continue
        for goods_id, wanted in request.lines.items():
            running[goods_id] -= wanted
            changed.add(goods_id)
        taken[request.flag] = Decided.DEDUCTED
        decisions.append(Decision(Outcome.DEDUCTED))
    return Plan(decisions, running, changed, returned, refused)
