"""A batch's writes, planned from what its hold read: the plan of every answer (plan.py), and
every row one transaction writes for it, in the order decide.py applies them:

    the returns' decisions moved to returned (on the held flag they were read with)
    the levels (each goods id's new level, its last seq, the change of its held units, a seed)
    the flows, the deducted and refused decisions, the returns, the adjustments, the events

Pure: decide.py reads the state, calls `batch_writes`, and applies the result; the property
tests and the model's table name these functions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stock_service.core.backorders import Waiting
from stock_service.core.ledger_lines import (
    allocation_rows,
    backorder_rows,
    ledger_rows,
    outbox_rows,
)
from stock_service.core.model import Decision, Request
from stock_service.core.places import Place
from stock_service.core.plan import Outcome, Plan, plan
from stock_service.core.transfers import Transfer


@dataclass(frozen=True)
class BatchState:
    """What a hold read: per goods id its level, last ledger seq, seed version and low-stock
    threshold; the flags already decided (flag -> decision) and those whose units are held."""

    levels: Mapping[str, int]
    seqs: Mapping[str, int]
    seeds: Mapping[str, int]
    thresholds: Mapping[str, int | None] = field(default_factory=dict)
    decided: Mapping[str, str] = field(default_factory=dict)
    held: frozenset[str] = frozenset()
    # per goods id, its named locations' levels and held units; the locations with a row;
    # the transfers the batch's steps name
    named: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    named_held: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    places: Mapping[str, Place] = field(default_factory=dict)
    transfers: Mapping[str, Transfer] = field(default_factory=dict)
    # per goods id: its backorder limit, units owed, and lines waiting (read when it owes any)
    limits: Mapping[str, int] = field(default_factory=dict)
    owed: Mapping[str, int] = field(default_factory=dict)
    waiting: Mapping[str, list[Waiting]] = field(default_factory=dict)
    # goods id -> location -> its backorder limit (read for the lines naming a location)
    location_limits: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


@dataclass
class BatchWrites:
    plan: Plan
    flows: list[dict[str, Any]]
    returns: list[dict[str, Any]]
    adjustments: list[dict[str, Any]]
    outbox: list[dict[str, Any]]
    allocations: list[dict[str, Any]]  # where each deducted line's units came from
    legs: list[dict[str, Any]]  # transfers' ledger lines
    waiting: list[dict[str, Any]]  # lines that start waiting for units (backorders)
    fills: list[dict[str, Any]]  # units handed to waiting lines (ledger lines)
    filled: dict[tuple[str, str], int]  # (flag, goods id) -> units the line got now
    deducted: list[Request]  # their decisions: deducted (held when a hold's)
    refused: list[tuple[str, str]]  # (flag, why): their decisions: refused
    returning: list[str]  # deducted flags whose stock comes back now

    @property
    def decisions(self) -> list[Decision]:
        return self.plan.decisions


def batch_writes(
    requests: Sequence[Request],
    state: BatchState,
    tokens: Mapping[str, int | None],
    events: bool = True,
    max_level: int | None = None,
) -> BatchWrites:
    """Every answer and every row of the batch. `tokens`: each goods id's fencing token for
    the rows (empty: unfenced); `events`: the stock events of its lines; `max_level`: the
    highest level an adjustment may leave."""
    batch = list(requests)
    the_plan = plan(
        batch,
        state.levels,
        state.decided,
        state.seqs,
        state.held,
        state.seeds,
        max_level,
        named=state.named,
        named_held=state.named_held,
        places=state.places,
        transfers=state.transfers,
        limits=state.limits,
        owed=state.owed,
        waiting=state.waiting,
        location_limits=state.location_limits,
    )
    flows, returns, adjustments, legs = ledger_rows(the_plan, batch, tokens)
    waiting, fills, filled = backorder_rows(the_plan, tokens)
    outbox = outbox_rows(the_plan.entries, batch, state.levels, state.thresholds) if events else []
    return BatchWrites(
        the_plan,
        flows,
        returns,
        adjustments,
        outbox,
        allocation_rows(the_plan.entries, batch),
        legs,
        waiting,
        fills,
        filled,
        the_plan.deducted(batch),
        [(r.flag, refusal(d)) for r, d in the_plan.refusing(batch)],
        [r.flag for r in the_plan.returning(batch)],
    )


def refusal(decision: Decision) -> str:
    """Why a flag was refused, for its decision row: each short line, wanted and had."""
    short = ", ".join(f"{s.goods_id} {s.requested}>{s.available}" for s in decision.shortfalls)
    return f"insufficient: {short}"


def attach_flows(requests: Sequence[Request], writes: BatchWrites, stamp: object) -> list[Decision]:
    """Each decision stamped with its commit's time, and each deducted request's committed
    rows on its decision, for its answer."""
    by_flag: dict[object, list[dict[str, object]]] = {}
    for flow in writes.flows:
        by_flag.setdefault(flow["flag"], []).append({**flow, "created_at": stamp})
    for request, decision in zip(requests, writes.decisions, strict=True):
        decision.committed_at = stamp
        if decision.outcome in (Outcome.DEDUCTED, Outcome.BACKORDERED):
            decision.flows = by_flag.get(request.flag, [])
    return writes.decisions
