"""The statements of one write transaction of the stock database (stock_service/storage/store.py's
`StockStore.writing`): levels, flows, returns, adjustments, decisions and stock events."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection

from shared.db import utcnow as now
from stock_service.storage.statements import (
    GATE_FENCED,
    INSERT_ADJUSTMENTS,
    INSERT_DECISIONS,
    INSERT_FLOWS,
    INSERT_OUTBOX,
    INSERT_RETURNS,
    INSERT_STOCK,
    MARK_RETURNED,
    NEW_SEED,
    READ_FENCE,
    READ_SEQ,
    WRITE_FENCED,
    WRITE_UNFENCED,
)


class StockWrite:
    """The statements of one write transaction (committed when `StockStore.writing` ends
    normally, rolled back otherwise)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.stamp = now()

    def set_level_unfenced(self, goods_id: str, level: int, lines: int, held: int = 0) -> int:
        """The unfenced write (FENCING=false, LOCK_BACKEND=none): the level as planned, last
        writer wins; the ledger's seq moved on by `lines` in the database, not set from the
        read, so the baseline's lost update shows in the level and never as two ledger lines
        with one seq. Returns the row's last seq after it (this transaction holds the row)."""
        params = {"g": goods_id, "num": level, "lines": lines, "held": held, "at": self.stamp}
        self.conn.execute(WRITE_UNFENCED, params)
        return int(self.conn.execute(READ_SEQ, {"g": goods_id}).scalar_one())

    def set_level_fenced(
        self,
        goods_id: str,
        level: int,
        seen: tuple[int, int],
        token: int,
        seq: int,
        held: int = 0,
    ) -> int | None:
        """Compare-and-set on the row as read, `seen`: its fence and its last ledger entry;
        writes only if both are still those, and moves the fence to `token`. None when
        written; else the fence the row has now (the same one: moved by this token's own
        earlier write, or another hold's of it)."""
        params = {
            "g": goods_id,
            "seen": seen[0],
            "seen_seq": seen[1],
            "num": level,
            "token": token,
            "seq": seq,
            "held": held,
            "at": self.stamp,
        }
        if self.conn.execute(WRITE_FENCED, params).rowcount == 1:
            return None
        return self._fence_now(goods_id)

    def pass_gate(self, goods_id: str, seen: tuple[int, int], token: int) -> int | None:
        """The fenced gate of a row this hold read and leaves as it is: the same
        compare-and-set as `set_level_fenced`, moving only the fence to `token`. None when
        passed; else the fence the row has now."""
        params = {"g": goods_id, "seen": seen[0], "seen_seq": seen[1], "token": token}
        if self.conn.execute(GATE_FENCED, params).rowcount == 1:
            return None
        return self._fence_now(goods_id)

    def _fence_now(self, goods_id: str) -> int | None:
        current = self.conn.execute(READ_FENCE, {"g": goods_id}).scalar_one_or_none()
        return int(current) if current is not None else None

    def create_level(
        self, goods_id: str, level: int, token: int | None, seq: int, seed: tuple[int, int]
    ) -> None:
        """A goods id brought into being by a `set` (IntegrityError if another writer did);
        `seed`: the level the last `set` left and its version."""
        self.conn.execute(
            INSERT_STOCK,
            {
                "goods_id": goods_id,
                "num": level,
                "seeded_num": seed[0],
                "seed_version": seed[1],
                "fence": token or 0,
                "ledger_seq": seq,
                "held": 0,
                "updated_at": self.stamp,
            },
        )

    def new_seed(self, goods_id: str, level: int, version: int) -> None:
        """A level set outright: the level that `set` left and its seed version (the plan's:
        a batch may set a goods id twice, or deduct after the `set`)."""
        self.conn.execute(NEW_SEED, {"g": goods_id, "seeded": level, "version": version})

    def add_flows(self, flows: list[dict[str, Any]]) -> None:
        """Flow rows (flag, goods_id, num, seed_version, fence, id, seq, level_after)."""
        self._insert(INSERT_FLOWS, flows)

    def add_returns(self, returns: list[dict[str, Any]]) -> None:
        """Return rows (flag, goods_id, num, seed_version, fence, id, seq, level_after)."""
        self._insert(INSERT_RETURNS, returns)

    def add_adjustments(self, adjustments: list[dict[str, Any]]) -> None:
        self._insert(INSERT_ADJUSTMENTS, adjustments)

    def add_outbox(self, events: list[dict[str, Any]]) -> None:
        """The stock events of this commit, one multi-row insert (stock_service/events.py)."""
        self._insert(INSERT_OUTBOX, events)

    def _insert(self, statement: Any, rows: list[dict[str, Any]]) -> None:
        if rows:
            self.conn.execute(statement, [{**r, "created_at": self.stamp} for r in rows])

    def mark_returned(self, flags: list[str], held: frozenset[str] = frozenset()) -> bool:
        """Deducted flags become returned, each only if its units are still held as they were
        read (`held`: the flags read as held); False when one of them moved since the read
        (returned by another writer, or its hold released)."""
        return all(
            self.conn.execute(MARK_RETURNED, {"f": f, "h": f in held}).rowcount == 1 for f in flags
        )

    def add_decisions(
        self,
        flags: list[str],
        outcome: str,
        reasons: str | list[str] | None = None,
        held: list[bool] | None = None,
    ) -> None:
        """One decision row per flag (a decided flag: IntegrityError); `reasons`, one for all
        or one per flag; `held`, per flag: a hold's deduction, its units held until paid."""
        if not flags:
            return
        why = reasons if isinstance(reasons, list) else [reasons] * len(flags)
        holds = held or [False] * len(flags)
        self.conn.execute(
            INSERT_DECISIONS,
            [
                {
                    "flag": f,
                    "outcome": outcome,
                    "reason": r and r[:200],
                    "held": h,
                    "created_at": self.stamp,
                }
                for f, r, h in zip(flags, why, holds, strict=True)
            ],
        )
