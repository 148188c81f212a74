"""The chaos run's checks of the ledger and its events, beside the order checks:

HA  an adjustment's answer holds: one answered 201 has exactly one ledger entry (found by its
    `reference`) with the delta, seq and level after it was told; one refused (409 stale or
    below zero, any 4xx) has none; one with no answer or a 5xx has at most one; no entry of the
    run's references that the operator did not send;
H4  fencing tokens never go backwards: per goods id, flows in commit order (their ledger seq)
    carry non-decreasing tokens, and the row's token is at least its newest flow's (checker.py
    says it with the others);
I8  its order part, by the ledger (returns_out_of_order, which checker.py joins to the rest of
    I8): a return comes after a deduction of its flag's goods id, or undoes a hand-over.
Commit order is the ledger's seq, never `created_at`: each stock host stamps its rows with its
own clock, and in a chaos run each runs on a clock of its own (clocks.py), up to 4 s apart: a
return written by a host behind is stamped before the deduction a host ahead wrote earlier.
I10 the stock events a consumer got through the faults (stream_consumer.py): every outbox row of
    the run's goods exactly once after dropping repeats, in ledger order per goods id, the
    levels replaying to the final ones (inventory/check/events.py, the same check as
    `inventory check`'s).
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Engine, select

from inventory.chaos.restocks import Adjust
from inventory.chaos.stream_consumer import StreamConsumer
from inventory.chaos.verdict import UNKNOWN, VALID, VIOLATED, Verdict, violated_if
from inventory.check.events import check_events
from inventory.check.events_source import read_outbox, wait_until_sent
from stock_service.storage.tables import (
    backorder_fill,
    stock,
    stock_adjustment,
    stock_flow,
    stock_return,
)

SEND_WAIT = 60.0  # seconds the relays get to send the run's last rows after the settlement
RECEIVE_WAIT = 30.0  # and the consumer to receive them


@dataclass(frozen=True)
class Entry:
    """An adjustment's ledger entry, as HA needs it."""

    reference: str
    goods_id: str
    seq: int
    delta: int
    level_after: int | None = None


def read_entries(stock_engine: Engine, prefix: str) -> list[Entry]:
    a = stock_adjustment.c
    query = select(a.reference, a.goods_id, a.seq, a.delta, a.level_after).where(
        a.reference.like(f"{prefix}%")
    )
    with stock_engine.connect() as conn:
        return [
            Entry(r.reference, r.goods_id, int(r.seq), int(r.delta), int(r.level_after))
            for r in conn.execute(query)
        ]


def adjustments_hold(adjusts: Sequence[Adjust], entries: Iterable[Entry]) -> Verdict:
    found: dict[str, list[Entry]] = defaultdict(list)
    for entry in entries:
        found[entry.reference].append(entry)
    bad: list[str] = []
    counts = {"made": 0, "refused": 0, "unknown": 0}
    for op in adjusts:
        mine = found.pop(op.reference, [])
        if op.status == 201:
            counts["made"] += 1
            if len(mine) != 1:
                bad.append(f"{op.reference}: answered 201, {len(mine)} ledger entries")
            elif (told := (op.goods_id, op.seq, op.delta, op.level)) != (
                (has := mine[0]).goods_id,
                has.seq,
                has.delta,
                has.level_after,
            ):
                said = f"{told[0]} seq {told[1]} delta {told[2]} level {told[3]}"
                bad.append(f"{op.reference}: told {said}, the ledger has {has}")
        elif op.known:
            counts["refused"] += 1
            if mine:
                bad.append(f"{op.reference}: answered {op.status}, yet {len(mine)} entries")
        else:
            counts["unknown"] += 1
            if len(mine) > 1:
                bad.append(f"{op.reference}: no answer, {len(mine)} ledger entries")
    bad += [f"{ref}: {len(e)} entries the operator never sent" for ref, e in found.items()]
    by_reason = Counter(op.reason for op in adjusts)
    reasons = ", ".join(f"{r} {n}" for r, n in sorted(by_reason.items())) or "none"
    return Verdict(
        "HA",
        "every adjustment's answer holds in the ledger",
        violated_if(bad),
        f"{len(adjusts)} adjustments ({reasons}): {counts['made']} made, {counts['refused']} "
        f"refused, {counts['unknown']} without an answer; {len(bad)} contradicted by the ledger",
        bad[:20],
    )


I10_READS = 4  # reads of the outbox and the stream, while the stock still moves
I10_PAUSE = 5.0  # seconds between them


def events_received(consumer: StreamConsumer, stock_engine: Engine, prefix: str) -> Verdict:
    """I10 on what the run's consumer got: once the relays sent every row of the run's goods
    (they run on; the run only waits) and the consumer received them (or the waits ran out:
    then the check names what is missing)."""
    # Read again while the stock still moves: a hold that expires after the outbox was read
    # returns its units, and the relay sends that return before the check reads the stream
    # (an event of no row read, a goods id past its level read). A violation stays; the race
    # ends when the last holds have expired.
    for attempt in range(I10_READS):
        try:
            waited, unsent = wait_until_sent(stock_engine, prefix, SEND_WAIT)
            rows, levels = read_outbox(stock_engine, prefix)
        except Exception as exc:
            return Verdict("I10", "stock events", UNKNOWN, f"{type(exc).__name__}: {exc}")
        missing = consumer.wait_for({row.id for row in rows}, RECEIVE_WAIT)
        result = check_events(rows, consumer.received(), levels)
        if result.ok or attempt == I10_READS - 1:
            break
        time.sleep(I10_PAUSE)
    detail = result.detail
    if unsent:
        detail = f"{unsent} rows still unsent {waited:.0f} s after the settlement; " + detail
    if missing:
        detail = f"{len(missing)} not received in {RECEIVE_WAIT:.0f} s; " + detail
    # What the consumer first had from the stock database, and of it what the stream never
    # brought at all (a feed made by hand, with no catch-up, has none). The faults kill
    # programs, never the machine, so Redis has lost nothing it acknowledged (its append-only
    # file, the relays' WAIT for the replica): an event the stream lost is a violation, even
    # though the consumer got it from the database.
    caught = list(getattr(consumer, "caught_up", []))
    lost = consumer.lost_by_stream() if caught else []
    if caught:
        shown = ", ".join(f"#{i}" for i in lost[:5])
        detail += (
            f"; {len(caught)} fetched from GET /stock-events first (after an interruption, "
            f"before the relays published them again), {len(lost)} of them never brought by "
            f"the stream" + (f": {shown}" if lost else "")
        )
    if consumer.errors:
        shown = "; ".join(consumer.errors[:5])
        detail += f" (the consumer's reads were interrupted {len(consumer.errors)} times: {shown})"
    numbers = result.numbers
    examples = [str(x) for k, v in numbers.items() if isinstance(v, list) for x in v][:20]
    examples = [f"lost by the stream: #{i}" for i in lost[:20]] + examples
    return Verdict(
        "I10",
        result.name,
        VALID if result.ok and not lost else VIOLATED,
        detail,
        examples[:20],
    )


def fences_never_go_back(stock_engine: Engine, prefix: str) -> Verdict:
    like = f"{prefix}%"
    with stock_engine.connect() as conn:
        flows = conn.execute(
            select(stock_flow.c.goods_id, stock_flow.c.fence, stock_flow.c.id)
            .where(stock_flow.c.goods_id.like(like), stock_flow.c.fence.is_not(None))
            .order_by(
                stock_flow.c.goods_id,
                stock_flow.c.seq.nulls_first(),  # rows from before the ledger came first
                stock_flow.c.created_at,
                stock_flow.c.fence,
            )
        ).all()
        found = conn.execute(
            select(stock.c.goods_id, stock.c.fence).where(stock.c.goods_id.like(like))
        )
        rows = {goods_id: fence for goods_id, fence in found}
    bad: list[str] = []
    newest: dict[str, int] = {}
    for goods_id, fence, flow_id in flows:
        if fence < newest.get(goods_id, fence):
            bad.append(f"{goods_id}: flow {flow_id} token {fence} after {newest[goods_id]}")
        newest[goods_id] = max(fence, newest.get(goods_id, fence))
    bad += [
        f"{g}: row token {rows.get(g)} < flow token {t}"
        for g, t in newest.items()
        if rows.get(g) is not None and rows[g] < t
    ]
    return Verdict(
        "H4",
        "fencing tokens never go backwards",
        violated_if(bad),
        f"{len(flows)} fenced flows on {len(newest)} goods ids; {len(bad)} out of order",
        bad[:20],
    )


def returns_out_of_order(stock_engine: Engine, prefix: str) -> list[str]:
    """I8's order part by the ledger: each return of a flag's goods id whose flag never took
    that goods id (no flow, no hand-over), or took it at a later ledger entry than the
    return's; by `created_at` only where a row has no seq (before the ledger)."""
    like = f"{prefix}%"
    taken: dict[tuple[str, str], list[tuple[Any, Any]]] = defaultdict(list)
    with stock_engine.connect() as conn:  # one transaction: the reconcilers may still write
        for f in conn.execute(
            select(
                stock_flow.c.flag, stock_flow.c.goods_id, stock_flow.c.seq, stock_flow.c.created_at
            ).where(stock_flow.c.goods_id.like(like))
        ):
            taken[(f.flag, f.goods_id)].append((f.seq, f.created_at))
        handed = {
            (h.flag, h.goods_id)
            for h in conn.execute(
                select(backorder_fill.c.flag, backorder_fill.c.goods_id).where(
                    backorder_fill.c.goods_id.like(like)
                )
            )
        }
        returns = conn.execute(
            select(
                stock_return.c.flag,
                stock_return.c.goods_id,
                stock_return.c.seq,
                stock_return.c.created_at,
            ).where(stock_return.c.goods_id.like(like))
        ).all()
    bad: list[str] = []
    for r in returns:
        flows = taken.get((r.flag, r.goods_id), [])
        if not flows and (r.flag, r.goods_id) not in handed:
            bad.append(f"{r.flag}/{r.goods_id}: returned at seq {r.seq}, never taken")
        for seq, at in flows:
            by_seq = seq is not None and r.seq is not None
            if (seq > r.seq) if by_seq else (at > r.created_at):
                bad.append(
                    f"{r.flag}/{r.goods_id}: deducted at seq {seq}, returned at seq {r.seq}"
                    if by_seq
                    else f"{r.flag}/{r.goods_id}: deducted at {at}, returned at {r.created_at}"
                )
    return bad


def with_returns_in_ledger_order(i8: Verdict, stock_engine: Engine, prefix: str) -> Verdict:
    """I8 (inventory.check, read with no return times) with its order part judged by the
    ledger (returns_out_of_order)."""
    try:
        bad = returns_out_of_order(stock_engine, prefix)
    except Exception as exc:  # the databases unreachable after the heal: not judged
        not_judged = UNKNOWN if i8.verdict == VALID else i8.verdict
        why = f"{i8.detail}; the ledger's order not read: {type(exc).__name__}: {exc}"
        return replace(i8, verdict=not_judged, detail=why)
    detail = f"{i8.detail}; {len(bad)} returns before their deduction in the ledger (by seq)"
    if not bad:
        return replace(i8, detail=detail)
    return replace(
        i8, verdict=VIOLATED, detail=detail, counterexamples=(bad + i8.counterexamples)[:20]
    )
