"""SQL of the stock database: levels, flows, and the fenced read-check-write deduction."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, func, insert, select, update
from sqlalchemy.engine import Connection

from shared.db import transaction
from shared.db import utcnow as now
from shared.ids import new_id
from shared.locks import Lease, LockLost
from stock_service.faults import NO_FAULTS, Faults
from stock_service.tables import stock, stock_flow

DB = "stock database"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Shortfall:
    goods_id: str
    requested: int
    available: int


class StockStore:
    def __init__(self, engine: Engine, fencing: bool, faults: Faults = NO_FAULTS) -> None:
        self.engine = engine
        self.fencing = fencing
        self.faults = faults

    # --- reads -----------------------------------------------------------------------------

    def level(self, goods_id: str) -> dict[str, Any] | None:
        with transaction(self.engine, DB, read_only=True) as conn:
            row = conn.execute(select(stock).where(stock.c.goods_id == goods_id)).mappings().first()
        return dict(row) if row else None

    def unknown_goods(self, goods_ids: list[str]) -> list[str]:
        with transaction(self.engine, DB, read_only=True) as conn:
            known = set(
                conn.execute(select(stock.c.goods_id).where(stock.c.goods_id.in_(goods_ids)))
                .scalars()
                .all()
            )
        return sorted(set(goods_ids) - known)

    def flows(self, flag: str) -> list[dict[str, Any]]:
        with transaction(self.engine, DB, read_only=True) as conn:
            rows = conn.execute(
                select(stock_flow).where(stock_flow.c.flag == flag).order_by(stock_flow.c.goods_id)
            ).mappings()
            return [dict(row) for row in rows]

    def has_flows(self, flag: str) -> bool:
        with transaction(self.engine, DB, read_only=True) as conn:
            count = conn.execute(
                select(func.count()).select_from(stock_flow).where(stock_flow.c.flag == flag)
            ).scalar_one()
        return bool(count)

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
        row = self.level(goods_id)
        assert row is not None
        return row

    def deduct(self, flag: str, lines: dict[str, int], lease: Lease) -> list[Shortfall]:
        """The read-check-write the lock protects, all or nothing: every line deducted with one
        flow row each in one transaction, or nothing at all. Returns the shortfalls (empty on
        success).

        Two transactions: the first registers this holder's fencing token on each row and reads
        the levels, and commits; the second writes each level only where the row still carries
        the token, inserts the flows, checks the lease and commits. A stale holder (paused past
        its session), even one that read before the new holder acquired, finds a newer token
        and writes nothing. Without a lock nothing orders the two transactions of concurrent
        buyers: that is the oversell LOCK_BACKEND=none shows."""
        goods_ids = sorted(lines)
        tokens = {g: lease.token_for(g) for g in goods_ids}
        fenced = self.fencing and all(t is not None for t in tokens.values())
        rows = self._register_and_read(goods_ids, tokens if fenced else None)
        log.debug("flag %s: registered %s and read %s", flag, tokens, rows)
        self.faults.fire("stop_after_read")
        short = [
            Shortfall(g, lines[g], int(rows[g].num) if g in rows else 0)
            for g in goods_ids
            if g not in rows or rows[g].num < lines[g]
        ]
        if short:
            return short
        with transaction(self.engine, DB) as conn:
            stamp = now()
            for g in goods_ids:
                new_level = int(rows[g].num) - lines[g]
                self._write_level(conn, g, new_level, tokens[g] if fenced else None)
            conn.execute(
                insert(stock_flow),
                [
                    {
                        "id": new_id(),
                        "flag": flag,
                        "goods_id": g,
                        "num": lines[g],
                        "seed_version": rows[g].seed_version,
                        "fence": tokens[g],
                        "created_at": stamp,
                    }
                    for g in goods_ids
                ],
            )
            self.faults.fire("kill_in_transaction")
            # The last moment to find out the lock is gone: after this the commit is ours.
            if self.fencing:
                lease.check()
        return []

    def _register_and_read(
        self, goods_ids: list[str], tokens: dict[str, int | None] | None
    ) -> dict[str, Any]:
        with transaction(self.engine, DB) as conn:
            for goods_id, token in (tokens or {}).items():
                registered = conn.execute(
                    update(stock)
                    .where(stock.c.goods_id == goods_id, stock.c.fence < token)
                    .values(fence=token)
                ).rowcount
                if registered != 1:
                    raise LockLost(f"fencing token {token} for {goods_id} is stale")
            return {
                row.goods_id: row
                for row in conn.execute(
                    select(stock.c.goods_id, stock.c.num, stock.c.seed_version).where(
                        stock.c.goods_id.in_(goods_ids)
                    )
                )
            }

    @staticmethod
    def _write_level(conn: Connection, goods_id: str, new_level: int, token: int | None) -> None:
        condition = [stock.c.goods_id == goods_id]
        if token is not None:
            condition.append(stock.c.fence == token)
        written = conn.execute(
            update(stock).where(*condition).values(num=new_level, updated_at=now())
        ).rowcount
        if written != 1:
            raise LockLost(f"write to {goods_id} refused: a newer lock holder has registered")
