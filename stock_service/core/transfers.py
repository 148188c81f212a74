"""A transfer's steps decided against the running levels (pure): the out leg takes the units
out of the source location (in transit from then), the in leg puts them in the target
(`receive`) or back in the source (`cancel`). Each leg once: a step the transfer has already
taken is answered as it is and moves nothing; a step it can no longer take (a receive after a
cancel, a cancel after a receive) is refused."""

from __future__ import annotations

from dataclasses import dataclass, replace

from shared.contract import Outcome
from stock_service.core.model import Decision, TransferLeg
from stock_service.core.running import RunningLedger

IN_TRANSIT = "in_transit"
RECEIVED = "received"
CANCELLED = "cancelled"
CREATED = "created"  # what `step` says of an out leg taken now: the transfer's row is new
# The state each step leaves.
AFTER = {"out": IN_TRANSIT, "receive": RECEIVED, "cancel": CANCELLED}


@dataclass(frozen=True)
class Transfer:
    """A transfer as read (or as this plan leaves it)."""

    transfer_id: str
    goods_id: str
    source: str
    target: str
    units: int
    state: str
    reference: str


def step(
    index: int, leg: TransferLeg, ledger: RunningLedger, transfers: dict[str, Transfer]
) -> tuple[Decision, str | None]:
    """The decision of one step, and the state it moves the transfer from (CREATED: an out leg
    taken now; None: it moved nothing). `transfers`: the running transfers of the plan, updated."""
    found = transfers.get(leg.transfer_id)
    if leg.step == "out":
        if found is not None:  # a repeated POST: the transfer as it is
            return Decision(Outcome.DUPLICATE, transfer=found.state), None
        level = ledger.shelves.level(leg.goods_id, leg.source)
        if level < leg.units:
            return Decision(Outcome.BELOW_ZERO, level=level), None
        parts = ((leg.source, -leg.units),)
        entry = ledger.move(index, leg.goods_id, "transfer_out", -leg.units, parts=parts)
        transfers[leg.transfer_id] = Transfer(
            leg.transfer_id,
            leg.goods_id,
            leg.source,
            leg.target,
            leg.units,
            IN_TRANSIT,
            leg.reference,
        )
        made = Decision(
            Outcome.ADJUSTED, level=entry.level_after, entries=[entry], transfer=IN_TRANSIT
        )
        return made, CREATED
    if found is None:
        return Decision(Outcome.STALE, transfer=None), None
    wanted = AFTER[leg.step]
    if found.state == wanted:
        return Decision(Outcome.DUPLICATE, transfer=found.state), None
    if found.state != IN_TRANSIT:
        return Decision(Outcome.STALE, transfer=found.state), None
    where = found.target if leg.step == "receive" else found.source
    parts = ((where, found.units),)
    entry = ledger.move(index, found.goods_id, "transfer_in", found.units, parts=parts)
    transfers[leg.transfer_id] = replace(found, state=wanted)
    return (
        Decision(Outcome.ADJUSTED, level=entry.level_after, entries=[entry], transfer=wanted),
        IN_TRANSIT,
    )
