"""Under the lock: the read-check-write of one hold, for every request of its batch.

    read the levels and the decided flags -> every answer and every row, from the pure core
    (stock_service/core/: batch_writes) -> one write transaction: the fenced levels, the
    flows, the decisions, the returns, the adjustments, the events -> check the lease -> commit

Fencing with one commit per hold. Each held name has a token that only grows. The write of a
level is a compare-and-set: `SET num = new, fence = token WHERE fence = <the fence this holder
read>`, and only if that fence is not above the token (equal: this same hold wrote the row, for
an earlier part of a split batch). So a write lands only if no other write touched the row
since this holder read it, and it moves the row's fence forward. Why this is sound without
committing a registration of the token before reading:
- A stale holder A (paused past its session) that read before the new holder B acquired: once
  B has written the row, A's compare-and-set finds B's fence and writes nothing (LockLost). If
  A writes before B does, A's write was a correct serial step (nothing touched the row between
  A's read and A's write), and B's own compare-and-set then fails: B finds an older fence on
  the row, reads again and replans, so B never overwrites what A sold.
- Without the lock nothing orders the reads and writes of concurrent buyers, and the unfenced
  write (FENCING=false, or LOCK_BACKEND=none) is the plain last-writer-wins UPDATE that
  oversells.
- The compare-and-set holds on each database: SQLite takes its write lock at BEGIN IMMEDIATE,
  so nothing writes between the fence check and the commit; PostgreSQL and MySQL (READ
  COMMITTED) evaluate the UPDATE's WHERE against the latest committed row and hold its row
  lock to the commit. tests/integration/test_fencing.py plays these interleavings on all three.

The decision rows (flag_decision, primary key flag) are the last word against a double
deduction: a flag decided by another attempt, or voided, after this hold read (a write that
did not take the lock), makes the insert fail, and the hold reads again and replans. A refusal
is a decision too, in the same commit: a late attempt of a refused flag (one that passed the
Redis check before the refusal, and reached the lock after it) reads it and is refused, even
if stock came back meanwhile; one that read before the refusal committed fails on the key.
Every goods id a hold read passes the fenced gate in its commit, whatever the plan does to it:
a refusal, or a cancel of a backordered line that gives back nothing, changes no level but
still writes rows that rest on what was read (a decision, a line given up, the units owed), and
a stale holder's give-up committed after a newer holder had handed that line units lost them.
A return
moves its flag's decision from deducted to returned by a compare-and-set, and its rows are
unique per (flag, goods id): nothing is returned twice.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from sqlalchemy.exc import IntegrityError

from coordination.locks import Lease, LockLost
from shared.contract import Decided
from shared.faults import NO_FAULTS, Faults
from shared.metrics import FENCING_REFUSALS
from stock_service.core import (
    BatchState,
    BatchWrites,
    Decision,
    Kind,
    Plan,
    Request,
    attach_flows,
    batch_writes,
    renumber,
    renumber_give_ups,
)
from stock_service.storage import (
    BatchRead,
    StockStore,
    StockWrite,
    write_backorders,
    write_moves,
    write_named,
)

log = logging.getLogger(__name__)


class _Overtaken(Exception):
    """An older (stale) holder wrote a row after this holder read it: read again and replan."""


def decide_batch(
    store: StockStore,
    requests: Sequence[Request],
    lease: Lease,
    fencing: bool,
    faults: Faults = NO_FAULTS,
    events: bool = True,
    max_level: int | None = None,
) -> list[Decision]:
    """One decision per request, in order. Raises LockLost (nothing written) when a newer holder
    has written a row this hold needs. `events`: write the stock events of its ledger lines to
    the outbox, in the same commit; `max_level`: the highest level an adjustment may leave."""
    tokens = {g: lease.token_for(g) for r in requests for g in r.lines}
    fenced = fencing and all(t is not None for t in tokens.values())
    # The fault points are a deduction's (and a return's), as they were before adjustments
    # joined the batch: a hold of adjustments alone (the admin seed) meets none of them.
    if all(r.adjust is not None for r in requests):
        faults = NO_FAULTS
    # Each retry is caused by a row overtaken by an older holder, or by a decision found by
    # the primary key and not by the read: both are rare, and each unique-constraint retry
    # marks one more request decided.
    for _attempt in range(len(requests) + 3):
        moving = [r.transfer.transfer_id for r in requests if r.transfer is not None]
        backordered = [r.flag for r in requests if r.kind is Kind.RETURN and r.backorder]
        flags = [r.flag for r in requests]
        located = sorted({g for r in requests if r.backorder for g in r.locations})
        read = store.read_batch(sorted(tokens), flags, moving, backordered, located)
        requests = as_of_the_hold(requests, read)
        writes = batch_writes(requests, _state(read), tokens if fenced else {}, events, max_level)
        faults.fire("stop_after_read")
        faults.fire("pair_after_read")
        if not writes.plan.writes:
            return writes.decisions
        try:
            with store.writing() as write:
                _apply(write, writes, read, tokens if fenced else None)
                faults.fire("kill_in_transaction")
                # The last moment to find out the lock is gone: after this the commit is ours.
                if fencing:
                    lease.check()
        except _Overtaken as exc:
            log.info("re-reading: %s", exc)
            continue
        except IntegrityError:
            log.info("a flag was decided since the read (the unique key found it): re-reading")
            continue
        return attach_flows(requests, writes, write.stamp)
    raise LockLost("the batch was overtaken on every attempt; nothing was written")


def as_of_the_hold(requests: Sequence[Request], read: BatchRead) -> list[Request]:
    """A return of a flag that backordered gives back what its lines were handed, and a line
    still waiting goes on being handed units (by restocks, returns, transfers received) until
    the return's hold: its lines and parts read before the hold may miss a hand-over committed
    between that read and the hold, whose units would then stay with a cancelled order. So
    they are read again in the hold's own read (`read_batch`, after the stock rows: a hand-over
    committed after those moved a row's seq, and the compare-and-set finds it), under the lock
    of its goods ids (every hand-over of them is made under it). Its goods ids stay the ones
    locked: a backordered line names its goods id from the deduction on, filled or not."""
    current = []
    for r in requests:
        if r.kind is Kind.RETURN and r.backorder and r.flag in read.gives_back:
            lines, parts, _ = read.gives_back[r.flag]
            r = replace(r, lines=lines, parts=parts)
        current.append(r)
    return current


def _write_levels(
    write: StockWrite, the_plan: Plan, read: BatchRead, tokens: dict[str, int | None] | None
) -> dict[str, int]:
    """The levels, fenced (a compare-and-set on the row as read), or with `tokens` None the
    unfenced baseline (see stock_service/core/unfenced.py); for the latter, how far the database
    moved each goods id's ledger seqs from the ones planned.

    Fenced, every goods id the hold read passes the gate, whatever its plan does to it: a row
    the plan leaves as it is (a refusal, a give-up that returns nothing) is compared and fenced
    like a row it writes, so nothing a hold commits rests on a read another writer has moved
    on since. One loop in goods id order: two holds' transactions take their row locks in the
    same order."""
    moved: dict[str, int] = {}
    writing = the_plan.changed | the_plan.created
    gated = set(read.rows) if tokens is not None else set()
    for goods_id in sorted(writing | gated):
        if goods_id not in writing:
            token = tokens[goods_id] if tokens else None
            assert token is not None
            _refuse_if_newer(goods_id, int(read.rows[goods_id].fence), token)
            as_read = (int(read.rows[goods_id].fence), int(read.rows[goods_id].ledger_seq))
            _overtaken_if_moved(goods_id, write.pass_gate(goods_id, as_read, token), token)
            continue
        level, seq = the_plan.levels[goods_id], the_plan.seqs.get(goods_id, 0)
        held = the_plan.held.get(goods_id, 0)
        seed = the_plan.seeded.get(goods_id)
        if goods_id in the_plan.created:
            assert seed is not None
            write.create_level(goods_id, level, tokens[goods_id] if tokens else None, seq, seed)
            continue
        if seed is not None:
            write.new_seed(goods_id, *seed)
        if tokens is None:
            lines = seq - int(read.rows[goods_id].ledger_seq)
            last = write.set_level_unfenced(goods_id, level, lines, held)
            if last != seq:
                moved[goods_id] = last - seq
            continue
        token = tokens[goods_id]
        assert token is not None
        seen = int(read.rows[goods_id].fence)
        # Equal is this hold's own write: a split batch (deduction.run_batch) serves its rest
        # under the same claim, and tokens are unique per hold and name (zookeeper/claim.py).
        # So the fence alone cannot tell a newer holder that such a hold wrote again since its
        # read: the compare-and-set matches the row's ledger seq too (the model's
        # FENCE_WITHOUT_SEQ), and a row moved under an older or equal token is read again.
        # A level set outright (the admin seed) resets the fence to this holder's token: the
        # way back into service after the lock service was rebuilt (its tokens start again).
        if goods_id not in the_plan.seeded:
            _refuse_if_newer(goods_id, seen, token)
        seen_seq = int(read.rows[goods_id].ledger_seq)
        current = write.set_level_fenced(goods_id, level, (seen, seen_seq), token, seq, held)
        _overtaken_if_moved(goods_id, current, token)
    return moved


def _refuse_if_newer(goods_id: str, seen: int, token: int) -> None:
    """A row read with a newer holder's fence: this holder is stale, and writes nothing."""
    if seen > token:
        FENCING_REFUSALS.inc()
        raise LockLost(
            f"write to {goods_id} refused: a newer lock holder (token {seen}) has written "
            f"since this holder (token {token}) acquired"
        )


def _overtaken_if_moved(goods_id: str, current: int | None, token: int) -> None:
    """After a compare-and-set: None, it held; a fence not above this holder's token, an older
    (or this same) holder moved the row since the read: read again; a newer one: stale."""
    if current is None:
        return
    if current <= token:
        raise _Overtaken(
            f"{goods_id} was written by an older lock holder (token {current}) after "
            f"this holder (token {token}) read it"
        )
    FENCING_REFUSALS.inc()
    raise LockLost(
        f"write to {goods_id} refused: a newer lock holder (token {current}) has written "
        f"since this holder (token {token}) read it"
    )


def _state(read: BatchRead) -> BatchState:
    rows = read.rows
    return BatchState(
        levels={g: int(row.num) for g, row in rows.items()},
        seqs={g: int(row.ledger_seq) for g, row in rows.items()},
        seeds={g: int(row.seed_version) for g, row in rows.items()},
        thresholds={g: row.low_stock for g, row in rows.items()},
        decided=read.decided,
        held=read.held,
        named=read.places.named,
        named_held=read.places.named_held,
        places=read.places.places,
        transfers=read.transfers or {},
        limits={g: int(row.backorder_limit) for g, row in rows.items()},
        owed={g: int(row.owed) for g, row in rows.items()},
        waiting=read.waiting or {},
        location_limits=read.location_limits,
    )


def _apply(
    write: StockWrite, writes: BatchWrites, read: BatchRead, tokens: dict[str, int | None] | None
) -> None:
    """The batch's writes, in one transaction. The returns' decisions first, so that this
    transaction takes a flag's decision row before its stock row, as a hold's release does
    (store.release_hold): the two never deadlock. The held count a return moves is the one it
    read: a release committed since makes that compare-and-set fail, and the batch reads again."""
    if not write.mark_returned(writes.returning, read.held):
        raise _Overtaken("a flag was returned or released by another writer")
    moved = _write_levels(write, writes.plan, read, tokens)
    if moved:  # the unfenced baseline: its lines take the seqs the database gave
        rows = (
            writes.flows,
            writes.returns,
            writes.adjustments,
            writes.outbox,
            writes.legs,
            writes.waiting,
            writes.fills,
        )
        renumber(moved, writes.decisions, *rows)
        renumber_give_ups(moved, writes.plan.backorders)
    write.add_flows(writes.flows)
    deducted = writes.deducted
    write.add_decisions(
        [r.flag for r in deducted], Decided.DEDUCTED, held=[r.hold for r in deducted]
    )
    write.add_decisions(
        [flag for flag, _ in writes.refused], Decided.REFUSED, [why for _, why in writes.refused]
    )
    write.add_returns(writes.returns)
    write.add_adjustments(writes.adjustments)
    write_named(write.conn, writes.plan.locations)
    the_plan = writes.plan
    moves = (writes.allocations, writes.legs, the_plan.new_transfers, the_plan.moved_transfers)
    if not write_moves(write.conn, *moves, write.stamp):
        raise _Overtaken("a transfer was moved on by another writer")
    owed = {g: int(row.owed) for g, row in read.rows.items()}
    lines = (writes.waiting, writes.fills, writes.filled, the_plan.backorders, owed)
    if not write_backorders(write.conn, *lines, write.stamp):
        raise _Overtaken("a waiting line was moved by another writer")
    write.add_outbox(writes.outbox)
