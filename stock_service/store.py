"""SQL of the stock database: levels, flows, and the fenced read-check-write of a batch.

The statements of the hot path are built once (below) and executed with parameters: building a
SQLAlchemy expression and its cache key on every call was a third of the stock service's CPU
per deduction (py-spy).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import Engine, bindparam, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from shared.db import transaction
from shared.db import utcnow as now
from shared.ids import new_id
from shared.locks import Lease, LockLost
from shared.metrics import FENCING_REFUSALS
from stock_service.batch import Decision, Plan, Request, Shortfall, plan
from stock_service.faults import NO_FAULTS, Faults
from stock_service.tables import stock, stock_flow

__all__ = ["Shortfall", "StockStore"]

DB = "stock database"
log = logging.getLogger(__name__)

READ_LEVELS = select(stock.c.goods_id, stock.c.num, stock.c.seed_version, stock.c.fence).where(
    stock.c.goods_id.in_(bindparam("goods_ids", expanding=True))
)
READ_FLAGGED = (
    select(stock_flow.c.flag)
    .where(stock_flow.c.flag.in_(bindparam("flags", expanding=True)))
    .distinct()
)
READ_FENCE = select(stock.c.fence).where(stock.c.goods_id == bindparam("g"))
KNOWN_GOODS = select(stock.c.goods_id).where(
    stock.c.goods_id.in_(bindparam("goods_ids", expanding=True))
)
# The write of a fenced holder: a compare-and-set on the row's fence (see deduct_batch).
WRITE_FENCED = (
    update(stock)
    .where(stock.c.goods_id == bindparam("g"), stock.c.fence == bindparam("seen"))
    .values(num=bindparam("num"), fence=bindparam("token"), updated_at=bindparam("at"))
)
WRITE_UNFENCED = (
    update(stock)
    .where(stock.c.goods_id == bindparam("g"))
    .values(num=bindparam("num"), updated_at=bindparam("at"))
)
INSERT_FLOWS = insert(stock_flow)


class _Overtaken(Exception):
    """An older (stale) holder wrote a row after this holder read it: read again and replan."""


class StockStore:
    def __init__(self, engine: Engine, fencing: bool, faults: Faults = NO_FAULTS) -> None:
        self.engine = engine
        self.fencing = fencing
        self.faults = faults
        # Stock rows are never deleted, so a goods id once seen stays known: the hot goods id
        # of a flash sale costs no query here after its first deduction.
        self._known: set[str] = set()
        self._known_guard = threading.Lock()

    # --- reads -----------------------------------------------------------------------------

    def level(self, goods_id: str) -> dict[str, Any] | None:
        with transaction(self.engine, DB, read_only=True) as conn:
            row = conn.execute(select(stock).where(stock.c.goods_id == goods_id)).mappings().first()
        return dict(row) if row else None

    def unknown_goods(self, goods_ids: list[str]) -> list[str]:
        unseen = [g for g in goods_ids if g not in self._known]
        if not unseen:
            return []
        with transaction(self.engine, DB, read_only=True) as conn:
            found = set(conn.execute(KNOWN_GOODS, {"goods_ids": unseen}).scalars())
        with self._known_guard:
            self._known |= found
        return sorted(set(unseen) - found)

    def recent_levels(self, limit: int = 500) -> dict[str, int]:
        """The levels of the goods ids most recently written, for the stock_level gauge."""
        with transaction(self.engine, DB, read_only=True) as conn:
            rows = conn.execute(
                select(stock.c.goods_id, stock.c.num)
                .order_by(stock.c.updated_at.desc())
                .limit(limit)
            )
            return {row.goods_id: int(row.num) for row in rows}

    def flows(self, flag: str) -> list[dict[str, Any]]:
        with transaction(self.engine, DB, read_only=True) as conn:
            rows = conn.execute(
                select(stock_flow).where(stock_flow.c.flag == flag).order_by(stock_flow.c.goods_id)
            ).mappings()
            return [dict(row) for row in rows]

    def has_flows(self, flag: str) -> bool:
        with transaction(self.engine, DB, read_only=True) as conn:
            return bool(conn.execute(READ_FLAGGED, {"flags": [flag]}).first())

    # --- writes under the lock -------------------------------------------------------------

    def set_level(self, goods_id: str, num: int, lease: Lease) -> dict[str, Any]:
        """Seed a level: a new seed_version, so the checker counts flows from here on. The
        fence is reset to this holder's token, so a restarted lock service (whose tokens
        start again from small numbers) can be re-seeded into use."""
        token = lease.token_for(goods_id) or 0
        with transaction(self.engine, DB) as conn:
            current = conn.execute(
                select(stock.c.seed_version).where(stock.c.goods_id == goods_id)
            ).scalar_one_or_none()
            values = {"num": num, "seeded_num": num, "fence": token, "updated_at": now()}
            if current is None:
                conn.execute(insert(stock).values(goods_id=goods_id, seed_version=1, **values))
            else:
                conn.execute(
                    update(stock)
                    .where(stock.c.goods_id == goods_id)
                    .values(seed_version=current + 1, **values)
                )
            lease.check()
        with self._known_guard:
            self._known.add(goods_id)
        row = self.level(goods_id)
        assert row is not None
        return row

    def deduct(self, flag: str, lines: dict[str, int], lease: Lease) -> list[Shortfall]:
        """One request in a batch of its own: its shortfalls, empty when it was deducted (or
        was a duplicate, which writes nothing)."""
        return self.deduct_batch([Request(flag, lines)], lease)[0].shortfalls

    def deduct_batch(self, requests: Sequence[Request], lease: Lease) -> list[Decision]:
        """The read-check-write the lock protects, for every request of one lock hold: read
        the levels (and which flags already have flows) once, decide each request in order
        (stock_service.batch.plan), then write the new levels and every deducted request's
        flow rows in one transaction, check the lease, commit. Returns one decision per
        request. Raises LockLost (nothing written) when a newer holder has written a row.

        Fencing with one commit per hold. Each held name has a token that only grows. The
        write of a level is a compare-and-set: `SET num = new, fence = token WHERE fence =
        <the fence this holder read>`, and only if that fence is not above the token (equal:
        this same hold wrote the row, for an earlier part of a split batch). So a write
        lands only if no other write touched the row since this holder read it, and it moves
        the row's fence forward. Why this stays sound without committing a registration of
        the token before reading (what this store did before, at the price of a second commit
        inside every hold):
        - A stale holder A (paused past its session) that read before the new holder B
          acquired: once B has written the row, A's compare-and-set finds B's fence and
          writes nothing (LockLost). If A writes before B does, A's write was a correct
          serial step (nothing touched the row between A's read and A's write), and B's own
          compare-and-set then fails: B finds an older fence on the row, reads again and
          replans, so B never overwrites what A sold.
        - Without the lock nothing orders the reads and writes of concurrent buyers, and the
          unfenced write (FENCING=false, or LOCK_BACKEND=none) is the plain last-writer-wins
          UPDATE that oversells.
        - The compare-and-set holds on each database: SQLite takes its write lock at BEGIN
          IMMEDIATE, so nothing writes between the fence check and the commit; PostgreSQL and
          MySQL (READ COMMITTED) evaluate the UPDATE's WHERE against the latest committed row
          and hold its row lock to the commit. tests/integration/test_fencing.py plays these
          interleavings on all three.
        The read runs in a read-only transaction apart from the write, so a holder paused
        between the two (the stale-holder demo) holds no database lock while it is stopped.
        """
        tokens = {g: lease.token_for(g) for r in requests for g in r.lines}
        fenced = self.fencing and all(t is not None for t in tokens.values())
        # Each retry is caused by a row overtaken by an older holder, or by a flag found by
        # the unique (flag, goods id) constraint and not by the read: both are rare, and
        # each unique-constraint retry marks one more request a duplicate.
        for _attempt in range(len(requests) + 3):
            goods_ids = sorted(tokens)
            rows, flagged = self._read(goods_ids, [r.flag for r in requests])
            the_plan = plan(list(requests), {g: int(row.num) for g, row in rows.items()}, flagged)
            self.faults.fire("stop_after_read")
            _stamp_versions(the_plan.decisions, rows)
            if not the_plan.changed:
                return the_plan.decisions
            try:
                self._write(requests, the_plan, rows, tokens if fenced else None, lease)
            except _Overtaken as exc:
                log.info("re-reading: %s", exc)
                continue
            except IntegrityError:
                log.info("the unique (flag, goods id) constraint found a flow the read missed")
                continue
            return the_plan.decisions
        raise LockLost("the batch was overtaken on every attempt; nothing was written")

    def _read(self, goods_ids: list[str], flags: list[str]) -> tuple[dict[str, Any], set[str]]:
        with transaction(self.engine, DB, read_only=True) as conn:
            rows = {
                row.goods_id: row for row in conn.execute(READ_LEVELS, {"goods_ids": goods_ids})
            }
            flagged = set(conn.execute(READ_FLAGGED, {"flags": flags}).scalars())
        return rows, flagged

    def _write(
        self,
        requests: Sequence[Request],
        the_plan: Plan,
        rows: dict[str, Any],
        tokens: dict[str, int | None] | None,
        lease: Lease,
    ) -> None:
        stamp = now()
        with transaction(self.engine, DB) as conn:
            for goods_id in sorted(the_plan.changed):
                level = the_plan.levels[goods_id]
                if tokens is None:
                    conn.execute(WRITE_UNFENCED, {"g": goods_id, "num": level, "at": stamp})
                else:
                    self._write_fenced(conn, goods_id, level, rows[goods_id].fence, tokens, stamp)
            conn.execute(
                INSERT_FLOWS,
                [
                    {
                        "id": new_id(),
                        "flag": request.flag,
                        "goods_id": goods_id,
                        "num": num,
                        "seed_version": rows[goods_id].seed_version,
                        "fence": (tokens or {}).get(goods_id),
                        "created_at": stamp,
                    }
                    for request in the_plan.deducted(requests)
                    for goods_id, num in sorted(request.lines.items())
                ],
            )
            self.faults.fire("kill_in_transaction")
            # The last moment to find out the lock is gone: after this the commit is ours.
            if self.fencing:
                lease.check()

    @staticmethod
    def _write_fenced(
        conn: Connection,
        goods_id: str,
        level: int,
        seen: int,
        tokens: dict[str, int | None],
        stamp: Any,
    ) -> None:
        token = tokens[goods_id]
        assert token is not None
        # Equal is this hold's own write: a split batch (deduction.run_batch) serves its rest
        # under the same claim, and tokens are unique per hold and name (zookeeper_claim.py).
        if seen > token:
            FENCING_REFUSALS.inc()
            raise LockLost(
                f"write to {goods_id} refused: a newer lock holder (token {seen}) has written "
                f"since this holder (token {token}) acquired"
            )
        params = {"g": goods_id, "seen": seen, "num": level, "token": token, "at": stamp}
        if conn.execute(WRITE_FENCED, params).rowcount == 1:
            return
        current = conn.execute(READ_FENCE, {"g": goods_id}).scalar_one_or_none()
        if current is not None and current <= token:
            raise _Overtaken(
                f"{goods_id} was written by an older lock holder (token {current}) after "
                f"this holder (token {token}) read it"
            )
        FENCING_REFUSALS.inc()
        raise LockLost(
            f"write to {goods_id} refused: a newer lock holder (token {current}) has written "
            f"since this holder (token {token}) read it"
        )


def _stamp_versions(decisions: list[Decision], rows: dict[str, Any]) -> None:
    for decision in decisions:
        decision.shortfalls = [
            replace(s, seed_version=int(rows[s.goods_id].seed_version)) if s.goods_id in rows else s
            for s in decision.shortfalls
        ]
