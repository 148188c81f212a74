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
- a deduction whose every line fits is `deducted` and lowers the running levels, each line
  taken from the locations the allocation rule chooses (allocating.py; a goods id with no
  named location has its whole level in the default one); with fill=partial, what fits is
  deducted and the rest answered as shortfalls;
- a deduction with a line that does not fit is `insufficient`, with the shortfall of each such
  line against the running level, and changes no level (all or nothing per request; partial:
  when nothing at all fits); its flag
  is decided `refused`, recorded in the same commit as the batch's deductions: the buyer is
  told no, so no attempt of that flag may ever deduct, whatever comes back to the shelf later
  (an attempt that passed the Redis check before the refusal and reaches the lock afterwards
  finds the decision);
- a return (the stock of a cancelled order coming back) of a deducted flag is `returned` and
  raises the running levels by exactly the flag's flows (its lines); of a flag returned before,
  `returned` again and nothing changes (nothing is returned twice); of a flag with no deduction,
  `voided` (the caller voids the flag first: a deduction arriving later is refused); each
  unit goes back to the location it came from;
- a transfer's step (transfers.py) moves its units out of one location or into another, once.

Levels only go down inside a batch but for returns, so a deduction refused here could not fit
at the end of the batch either, unless a return came after it.

A member's answer depends on its own request and the levels the members before it left, never
on a member that changed no level: a request refused (for stock, a stale expected level, a
level it would take below zero or raise above the cap), or one that cannot fit, leaves every other
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
from stock_service.core.allocating import deduct
from stock_service.core.backordering import give_back, serve_waiting, try_backorder
from stock_service.core.backorders import Backorders, Waiting
from stock_service.core.model import (
    REASONS,
    Adjustment,
    Decision,
    Entry,
    Kind,
    Request,
    Shortfall,
)
from stock_service.core.places import DEFAULT, Place
from stock_service.core.running import RunningLedger
from stock_service.core.transfers import CREATED, Transfer, step

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
    # the named locations' levels it moves (places.Shelves.rows)
    locations: list[dict[str, object]] = field(default_factory=list)
    # transfers: those an out leg creates, and (id, state read, state after) of those moved on
    new_transfers: list[Transfer] = field(default_factory=list)
    moved_transfers: list[tuple[str, str, str]] = field(default_factory=list)
    backorders: Backorders | None = None  # the lines that wait, are filled or give up

    @property
    def writes(self) -> bool:
        """Whether the plan has anything to commit: a level, a flow, a return (one that gives
        back nothing still moves its flag and gives up its line), a refusal."""
        return bool(self.changed or self.refused or self.created or self.returned)

    def deducted(self, requests: Iterable[Request]) -> list[Request]:
        return [
            request
            for request, decision in zip(requests, self.decisions, strict=True)
            if decision.outcome in (Outcome.DEDUCTED, Outcome.BACKORDERED)
        ]

    def returning(self, requests: Iterable[Request]) -> list[Request]:
        return [request for i, request in enumerate(requests) if i in self.returned]

    def refusing(self, requests: Iterable[Request]) -> list[tuple[Request, Decision]]:
        return [
            (request, self.decisions[i]) for i, request in enumerate(requests) if i in self.refused
        ]


def plan(
    requests: list[Request],
    levels: Mapping[str, int],
    decided: Mapping[str, str],
    seqs: Mapping[str, int] | None = None,
    held_flags: frozenset[str] = frozenset(),
    seed_versions: Mapping[str, int] | None = None,
    max_level: int | None = None,
    *,
    named: Mapping[str, Mapping[str, int]] | None = None,
    named_held: Mapping[str, Mapping[str, int]] | None = None,
    places: Mapping[str, Place] | None = None,
    transfers: Mapping[str, Transfer] | None = None,
    limits: Mapping[str, int] | None = None,
    owed: Mapping[str, int] | None = None,
    waiting: Mapping[str, list[Waiting]] | None = None,
    location_limits: Mapping[str, Mapping[str, int]] | None = None,
) -> Plan:
    """`levels`: the level of each known goods id (a missing id has none to give; a `set`
    brings it into being); `decided`: the flags the stock database has decided, with their
    decision; `seqs`: each goods id's last ledger entry; `held_flags`: the deducted flags whose
    units are still held (an unpaid hold), released when their stock comes back;
    `seed_versions`: each known goods id's seed version; `max_level`: the highest level an
    adjustment may raise a total to (MAX_STOCK_LEVEL; returns and in-legs may pass it);
    `named`, `named_held`: each goods id's levels and held units at its named locations
    (places.py); `places`: the locations that have a row;
    `transfers`: the transfers the batch's steps name, as read; `limits`, `owed`, `waiting`:
    each goods id's backorder limit, units owed and waiting lines, `location_limits` its
    locations' backorder limits (backorders.py)."""
    ledger = RunningLedger(levels, seqs or {}, seed_versions or {}, named, named_held)
    places = places or {}
    running = dict(transfers or {})
    new_transfers: list[Transfer] = []
    moved_transfers: list[tuple[str, str, str]] = []
    backorders = Backorders.of(limits or {}, owed or {}, waiting or {}, location_limits)
    taken = {flag: Decided(outcome) for flag, outcome in decided.items()}
    returned: set[int] = set()
    refused: set[int] = set()
    created: set[str] = set()
    decisions = []
    for index, request in enumerate(requests):
        if request.adjust is not None:
            decision = _adjust(index, request.adjust, ledger, max_level)
            adjusted = decision.outcome is Outcome.ADJUSTED
            if adjusted:  # units that arrive go to the lines waiting for them
                serve_waiting(index, request.adjust.goods_id, ledger, places, backorders)
            if (
                adjusted
                and request.adjust.reason == "set"
                and request.adjust.goods_id not in levels
            ):
                created.add(request.adjust.goods_id)
            decisions.append(decision)
            continue
        if request.transfer is not None:
            decision, was = step(index, request.transfer, ledger, running)
            if decision.entries and decision.entries[0].delta > 0:
                serve_waiting(index, request.transfer.goods_id, ledger, places, backorders)
            moved = running.get(request.transfer.transfer_id)
            if was == CREATED and moved is not None:
                new_transfers.append(moved)
            elif was is not None and moved is not None:
                moved_transfers.append((moved.transfer_id, was, moved.state))
            decisions.append(decision)
            continue
        earlier = taken.get(request.flag)
        if request.kind is Kind.RETURN:
            decision = Decision(Outcome.RETURNED if earlier is not None else Outcome.VOIDED)
            if earlier is Decided.DEDUCTED:
                held = request.flag in held_flags
                decision.entries = give_back(index, request, ledger, places, backorders, held)
                taken[request.flag] = Decided.RETURNED
                returned.add(index)
            elif earlier is not Decided.RETURNED:
                decision.outcome = Outcome.VOIDED
            decisions.append(decision)
            continue
        if earlier is not None:
            decisions.append(Decision(AS_DEDUCTION[earlier]))
            continue
        for goods_id in sorted(request.lines):  # the lines waiting are served before it
            serve_waiting(index, goods_id, ledger, places, backorders)
        decision = deduct(index, request, ledger, places)
        if decision.outcome is Outcome.INSUFFICIENT:
            decision = try_backorder(index, request, decision, ledger, places, backorders)
        if decision.outcome is Outcome.INSUFFICIENT:
            taken[request.flag] = Decided.REFUSED
            refused.add(index)
        else:
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
        ledger.shelves.rows(),
        new_transfers,
        moved_transfers,
        backorders,
    )


def _adjust(
    index: int, adjustment: Adjustment, ledger: RunningLedger, max_level: int | None
) -> Decision:
    """An adjustment against the running level: stale if the level is not the one expected,
    refused if it would take the level below zero, or raise the total above `max_level`,
    else one ledger line (a delta of 0 too).

    The cap bounds what an adjustment may RAISE a level to, never what it may leave: returns
    and transfers' in-legs are never refused (their units are real), so they may lift a total
    past the cap. Such a level still takes every change that lowers it or keeps it (a loss, a
    count, a compare-and-swap naming it), and refuses a restock until it is back under."""
    total = ledger.level(adjustment.goods_id)
    where = adjustment.location or DEFAULT
    level = ledger.shelves.level(adjustment.goods_id, where)
    if adjustment.expected is not None and adjustment.expected != level:
        return Decision(Outcome.STALE, level=level)
    delta = adjustment.delta if adjustment.delta is not None else (adjustment.num or 0) - level
    if level + delta < 0:
        return Decision(Outcome.BELOW_ZERO, level=level)
    if max_level is not None and delta > 0 and total + delta > max_level:
        return Decision(Outcome.ABOVE_MAX, level=total)
    seeds = adjustment.reason == "set"
    parts = ((where, delta),)
    entry = ledger.move(index, adjustment.goods_id, "adjusted", delta, seeds, parts)
    return Decision(Outcome.ADJUSTED, level=entry.level_after, entries=[entry])
