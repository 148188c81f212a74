"""The stock repository: reads and writes of levels, flows and flag decisions, and nothing of
the protocol around them (that is stock_service/decide.py, under the lock).

The statements of the hot path are built once (below) and executed with parameters: building a
SQLAlchemy expression and its cache key on every call was a third of the stock service's CPU
per deduction (py-spy).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, bindparam, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from shared.contract import Decided
from shared.db import transaction
from shared.db import utcnow as now
from shared.locks import Lease
from stock_service.tables import flag_decision, stock, stock_flow, stock_return

__all__ = ["BatchRead", "StockStore", "StockWrite"]

DB = "stock database"

READ_LEVELS = select(stock.c.goods_id, stock.c.num, stock.c.seed_version, stock.c.fence).where(
    stock.c.goods_id.in_(bindparam("goods_ids", expanding=True))
)
READ_DECIDED = select(flag_decision.c.flag, flag_decision.c.outcome).where(
    flag_decision.c.flag.in_(bindparam("flags", expanding=True))
)
READ_FENCE = select(stock.c.fence).where(stock.c.goods_id == bindparam("g"))
KNOWN_GOODS = select(stock.c.goods_id).where(
    stock.c.goods_id.in_(bindparam("goods_ids", expanding=True))
)
READ_FLOWS = (
    select(stock_flow).where(stock_flow.c.flag == bindparam("flag")).order_by(stock_flow.c.goods_id)
)
# The write of a fenced holder: a compare-and-set on the row's fence (see decide.py).
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
INSERT_DECISIONS = insert(flag_decision)
INSERT_RETURNS = insert(stock_return)
# A deducted flag becomes returned: a compare-and-set, so a flag is returned once.
MARK_RETURNED = (
    update(flag_decision)
    .where(flag_decision.c.flag == bindparam("f"), flag_decision.c.outcome == Decided.DEDUCTED)
    .values(outcome=Decided.RETURNED)
)
READ_RETURNS = (
    select(stock_return)
    .where(stock_return.c.flag == bindparam("flag"))
    .order_by(stock_return.c.goods_id)
)


@dataclass(frozen=True)
class BatchRead:
    """What a hold reads before it decides: the levels, and the flags already decided."""

    rows: dict[str, Any]  # goods id -> row (num, seed_version, fence)
    decided: dict[str, str]  # flag -> its decision (shared.contract.Decided)


class StockWrite:
    """The statements of one write transaction (committed when `StockStore.writing` ends
    normally, rolled back otherwise)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.stamp = now()

    def set_level(self, goods_id: str, level: int) -> None:
        """The unfenced write: last writer wins (FENCING=false, LOCK_BACKEND=none)."""
        self.conn.execute(WRITE_UNFENCED, {"g": goods_id, "num": level, "at": self.stamp})

    def set_level_fenced(self, goods_id: str, level: int, seen: int, token: int) -> int | None:
        """Compare-and-set on the row's fence: writes only if the fence is still `seen`, and
        moves it to `token`. None when written; else the fence the row has now."""
        params = {"g": goods_id, "seen": seen, "num": level, "token": token, "at": self.stamp}
        if self.conn.execute(WRITE_FENCED, params).rowcount == 1:
            return None
        current = self.conn.execute(READ_FENCE, {"g": goods_id}).scalar_one_or_none()
        return int(current) if current is not None else None

    def add_flows(self, flows: list[dict[str, Any]]) -> None:
        """Flow rows (flag, goods_id, num, seed_version, fence, id)."""
        if flows:
            self.conn.execute(INSERT_FLOWS, [{**f, "created_at": self.stamp} for f in flows])

    def add_returns(self, returns: list[dict[str, Any]]) -> None:
        """Return rows (flag, goods_id, num, seed_version, fence, id)."""
        if returns:
            self.conn.execute(INSERT_RETURNS, [{**r, "created_at": self.stamp} for r in returns])

    def mark_returned(self, flags: list[str]) -> bool:
        """Deducted flags become returned; False when one of them was not deducted any more
        (returned by another writer since the read)."""
        return all(self.conn.execute(MARK_RETURNED, {"f": f}).rowcount == 1 for f in flags)

    def add_decisions(
        self, flags: list[str], outcome: str, reasons: str | list[str] | None = None
    ) -> None:
        """One decision row per flag (a decided flag: IntegrityError); `reasons`, one for all
        or one per flag."""
        if not flags:
            return
        why = reasons if isinstance(reasons, list) else [reasons] * len(flags)
        self.conn.execute(
            INSERT_DECISIONS,
            [
                {"flag": f, "outcome": outcome, "reason": r and r[:200], "created_at": self.stamp}
                for f, r in zip(flags, why, strict=True)
            ],
        )


class StockStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
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
            return [dict(row) for row in conn.execute(READ_FLOWS, {"flag": flag}).mappings()]

    def returns(self, flag: str) -> list[dict[str, Any]]:
        with transaction(self.engine, DB, read_only=True) as conn:
            return [dict(row) for row in conn.execute(READ_RETURNS, {"flag": flag}).mappings()]

    def decisions(self, flags: list[str]) -> dict[str, str]:
        """What the stock database decided for each of these flags that it decided."""
        with transaction(self.engine, DB, read_only=True) as conn:
            return {r.flag: str(r.outcome) for r in conn.execute(READ_DECIDED, {"flags": flags})}

    def decision(self, flag: str) -> str | None:
        """What the stock database decided for this flag (shared.contract.Decided), or None."""
        with transaction(self.engine, DB, read_only=True) as conn:
            found = conn.execute(READ_DECIDED, {"flags": [flag]}).first()
        return str(found.outcome) if found else None

    def read_batch(self, goods_ids: list[str], flags: list[str]) -> BatchRead:
        """One read-only transaction: the levels of these goods ids and which of these flags are
        decided. Apart from the write, so a holder paused between the two holds no database
        lock while it is stopped."""
        with transaction(self.engine, DB, read_only=True) as conn:
            rows = {r.goods_id: r for r in conn.execute(READ_LEVELS, {"goods_ids": goods_ids})}
            decided = {r.flag: str(r.outcome) for r in conn.execute(READ_DECIDED, {"flags": flags})}
        return BatchRead(rows, decided)

    # --- writes ----------------------------------------------------------------------------

    @contextmanager
    def writing(self) -> Iterator[StockWrite]:
        """One write transaction: committed when the block ends normally, rolled back when it
        raises (a lost lock, an overtaken row, a unique constraint)."""
        with transaction(self.engine, DB) as conn:
            yield StockWrite(conn)

    def void(self, flag: str, reason: str) -> str:
        """Decide `flag` as voided unless it is decided already; the flag's decision after
        (voided, or what it was: deducted, refused, returned).
        Needs no lock: the decision's primary key orders this insert against a deduction's
        (whichever commits first decides, the other finds its row)."""
        try:
            with self.writing() as write:
                write.add_decisions([flag], Decided.VOIDED, reason)
            return "voided"
        except IntegrityError:
            decided = self.decision(flag)
            assert decided is not None, f"flag {flag}: a unique violation, yet no decision"
            return decided

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
