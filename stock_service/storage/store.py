"""The stock repository: reads and writes of levels, flows and flag decisions, and nothing of
the protocol around them (that is stock_service/deduction/decide.py, under the lock). A write is
one transaction (`StockStore.writing`), its statements `StockWrite`'s: levels, flows, returns,
adjustments, decisions and stock events.

The statements of the hot path are built once (statements.py) and executed with parameters:
building a SQLAlchemy expression and its cache key on every call was a third of the stock
service's CPU per deduction (py-spy).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from shared.contract import Decided
from shared.database.engines import transaction
from shared.database.engines import utcnow as now
from stock_service.core import DEFAULT, Transfer, Waiting, parts_of
from stock_service.storage.backorder_store import (
    flag_backorders,
    read_location_limits,
    read_waiting,
)
from stock_service.storage.location_store import (
    UNHOLD_NAMED,
    Places,
    allocations,
    owing_at,
    read_levels,
    read_transfers,
)
from stock_service.storage.statements import (
    GATE_FENCED,
    INSERT_ADJUSTMENTS,
    INSERT_DECISIONS,
    INSERT_FLOWS,
    INSERT_OUTBOX,
    INSERT_RETURNS,
    INSERT_STOCK,
    KNOWN_GOODS,
    MARK_RETURNED,
    NEW_SEED,
    READ_DECIDED,
    READ_FENCE,
    READ_FLOWS,
    READ_RETURNS,
    READ_SEQ,
    RELEASE_HOLD,
    UNHOLD,
    WRITE_FENCED,
    WRITE_UNFENCED,
)
from stock_service.storage.tables import stock

__all__ = ["BatchRead", "StockStore", "StockWrite"]

DB = "stock database"

# What a return gives back: units per goods id, where they came from, whether it backordered.
GivesBack = tuple[dict[str, int], dict[str, dict[str, int]], bool]


@dataclass(frozen=True)
class BatchRead:
    """What a hold reads before it decides: the levels, and the flags already decided."""

    rows: dict[str, Any]  # goods id -> row (num, seed_version, fence, ledger_seq, low_stock)
    decided: dict[str, str]  # flag -> its decision (shared.contract.Decided)
    held: frozenset[str] = frozenset()  # the deducted flags whose units are still held
    places: Places = field(default_factory=Places)  # named levels, locations
    transfers: dict[str, Transfer] | None = None  # the transfers its steps name
    waiting: dict[str, list[Waiting]] | None = None  # lines waiting for units (backorders)
    # flag -> what its return gives back (StockStore.returning), read with the levels
    gives_back: dict[str, GivesBack] = field(default_factory=dict)
    # goods id -> location -> backorder limit, of the goods ids a backorder line names a place of
    location_limits: dict[str, dict[str, int]] = field(default_factory=dict)


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

    def read_batch(
        self,
        goods_ids: list[str],
        flags: list[str],
        transfers: list[str] | None = None,
        returning: list[str] | None = None,
        located: list[str] | None = None,
    ) -> BatchRead:
        """One read-only transaction: the levels of these goods ids (in total and at their
        named locations), the locations, which of these flags are decided, these transfers,
        and what these flags' returns give back (`returning`: flags that backordered, whose
        lines go on being handed units until their return's hold), and the locations' backorder
        limits of `located` (goods ids a line with fill=backorder names a location of). Apart
        from the write, so a
        holder paused between the two holds no database lock while it is stopped.

        The stock rows come first: each later statement may see a commit the first did not
        (READ COMMITTED), but every such commit moved a row's fence or ledger seq, which the
        hold's compare-and-set then finds changed, and the hold reads again."""
        with transaction(self.engine, DB, read_only=True) as conn:
            rows, places = read_levels(conn, goods_ids)
            waiting = read_waiting(conn, [g for g, row in rows.items() if row.owed])
            found = list(conn.execute(READ_DECIDED, {"flags": flags}))
            moving = read_transfers(conn, transfers or [])
            gives = {flag: _gives_back(conn, flag) for flag in returning or []}
            capped = read_location_limits(conn, located or [])
        decided = {r.flag: str(r.outcome) for r in found}
        held = frozenset(r.flag for r in found if r.held)
        return BatchRead(rows, decided, held, places, moving, waiting, gives, capped)

    def returning(self, flag: str) -> tuple[dict[str, int], dict[str, dict[str, int]], bool]:
        """What a return of a deducted flag gives back: its units per goods id (its flows, and
        what its backordered lines got since; a line still waiting is named with what it has),
        where each came from, by location, and whether it has backordered lines (then what
        they were handed may grow until the return's hold: the hold reads it again, in its
        own read, `read_batch`'s `returning`)."""
        with transaction(self.engine, DB, read_only=True) as conn:
            return _gives_back(conn, flag)

    def backorders(self, flag: str) -> list[dict[str, Any]]:
        """A flag's backordered lines: each goods id's units owed when it started waiting,
        filled since, and its state (waiting, filled, cancelled)."""
        with transaction(self.engine, DB, read_only=True) as conn:
            lines, _fills = flag_backorders(conn, flag)
        return [
            {"goodsId": r.goods_id, "wanted": r.wanted, "filled": r.filled, "state": r.state}
            for r in sorted(lines, key=lambda r: r.goods_id)
        ]

    def allocations(self, flag: str) -> dict[str, dict[str, int]]:
        """Where each goods id of a deducted flag came from (missing: the default location)."""
        with transaction(self.engine, DB, read_only=True) as conn:
            return allocations(conn, flag)

    def owing_at(self, location_id: str) -> list[str]:
        """The goods ids that owe units and have some at this location."""
        with transaction(self.engine, DB, read_only=True) as conn:
            return owing_at(conn, location_id)

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

    def release_hold(self, flag: str) -> bool:
        """A hold paid: its units are no longer held. Needs no lock: the held count moves
        relatively, and the decision row's compare-and-set orders it against a return of the
        same flag, which matches the held flag it read (deduction/decide.py): whichever commits
        first, the other finds the row moved, so the units stop being held exactly once. False when
        there was nothing to release (not a hold, released before, or its stock came back)."""
        with transaction(self.engine, DB) as conn:
            if conn.execute(RELEASE_HOLD, {"f": flag}).rowcount != 1:
                return False
            for flow in conn.execute(READ_FLOWS, {"flag": flag}):
                conn.execute(UNHOLD, {"g": flow.goods_id, "n": flow.num})
            for goods_id, parts in allocations(conn, flag).items():
                for loc, units in parts.items():
                    conn.execute(UNHOLD_NAMED, {"g": goods_id, "loc": loc, "n": units})
        return True

    def known(self, goods_id: str) -> None:
        """A goods id brought into being (a `set`): known from now on."""
        with self._known_guard:
            self._known.add(goods_id)


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


def _gives_back(conn: Connection, flag: str) -> GivesBack:
    """A flag's return, read on `conn` (StockStore.returning)."""
    flows = list(conn.execute(READ_FLOWS, {"flag": flag}))
    parts = allocations(conn, flag)
    lines, fills = flag_backorders(conn, flag)
    units = {row.goods_id: int(row.num) for row in flows}
    for goods_id, num in units.items():
        parts.setdefault(goods_id, {DEFAULT: num})
    for line in lines:
        units.setdefault(line.goods_id, 0)
    for fill in fills:
        units[fill.goods_id] = units.get(fill.goods_id, 0) + int(fill.num)
        came = parts.setdefault(fill.goods_id, {})
        for loc, num in parts_of(fill.location):
            came[loc] = came.get(loc, 0) + num
    return units, parts, bool(lines)
