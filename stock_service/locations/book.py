"""The stock database's locations as the admin and the readers see them (docs/locations.md):
the location rows, a goods id's levels per location, its units in transit, a transfer. What a
batch reads and writes under its hold is stock_service/storage/location_store.py."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from shared.database.engines import transaction
from shared.database.engines import utcnow as now
from stock_service.core import DEFAULT, DEFAULT_PLACE, IN_TRANSIT, Place, Transfer
from stock_service.storage import as_transfer, location, stock, stock_location, stock_transfer

DB = "stock database"


class LocationBook:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def put(self, location_id: str, priority: int, active: bool) -> bool:
        """A location made or changed; True when it is new. Needs no lock: a batch reads the
        locations once under its hold, so it decides against one version of them."""
        values = {"priority": priority, "active": active, "updated_at": now()}
        with transaction(self.engine, DB) as conn:
            where = location.c.location_id == location_id
            if conn.execute(update(location).where(where).values(**values)).rowcount:
                return False
        try:
            with transaction(self.engine, DB) as conn:
                conn.execute(insert(location).values(location_id=location_id, **values))
            return True
        except IntegrityError:  # made meanwhile by another caller: this one changes it
            return self.put(location_id, priority, active)

    def places(self) -> list[Place]:
        """Every location, best first (the default one even without a row)."""
        with transaction(self.engine, DB, read_only=True) as conn:
            rows = {r.location_id: r for r in conn.execute(select(location))}
        found = {DEFAULT: DEFAULT_PLACE}
        found.update({i: Place(i, int(r.priority), bool(r.active)) for i, r in rows.items()})
        return sorted(found.values(), key=lambda p: (p.priority, p.location_id))

    def unknown(self, location_ids: list[str]) -> list[str]:
        """Those of these locations that do not exist (the default one always does)."""
        wanted = sorted(set(location_ids) - {DEFAULT})
        if not wanted:
            return []
        query = select(location.c.location_id).where(location.c.location_id.in_(wanted))
        with transaction(self.engine, DB, read_only=True) as conn:
            found = set(conn.execute(query).scalars())
        return [i for i in wanted if i not in found]

    def view(self, goods_id: str) -> tuple[dict[str, Any], list[dict[str, Any]], int] | None:
        """GET /stock's answer from one snapshot: the goods id's stock row, its level and held
        units per location (the default's being what the total leaves), and its units in
        transit; None for an unknown goods id. One statement: on PostgreSQL and MariaDB at
        READ COMMITTED each statement sees the commits made before it, so the row and the
        named levels read by two could straddle a commit (a restock at a named location
        between them showed the default location at -5)."""
        moving = (
            select(func.coalesce(func.sum(stock_transfer.c.units), 0))
            .where(stock_transfer.c.goods_id == goods_id, stock_transfer.c.state == IN_TRANSIT)
            .scalar_subquery()
        )
        named = stock_location.c
        query = (
            select(
                stock,
                named.location_id.label("at_location"),
                named.num.label("at_num"),
                named.held.label("at_held"),
                moving.label("in_transit"),
            )
            .select_from(stock.outerjoin(stock_location, named.goods_id == stock.c.goods_id))
            .where(stock.c.goods_id == goods_id)
            .order_by(named.location_id)
        )
        with transaction(self.engine, DB, read_only=True) as conn:
            rows = list(conn.execute(query).mappings())
        if not rows:
            return None
        row = {c.name: rows[0][c.name] for c in stock.columns}
        others = [
            {"location": r["at_location"], "num": int(r["at_num"]), "held": int(r["at_held"])}
            for r in rows
            if r["at_location"] is not None
        ]
        default = {
            "location": DEFAULT,
            "num": int(row["num"]) - sum(o["num"] for o in others),
            "held": int(row["held"]) - sum(o["held"] for o in others),
        }
        return row, [default, *others], int(rows[0]["in_transit"])

    def transfer(self, transfer_id: str) -> Transfer | None:
        query = select(stock_transfer).where(stock_transfer.c.transfer_id == transfer_id)
        with transaction(self.engine, DB, read_only=True) as conn:
            row = conn.execute(query).first()
        return as_transfer(row) if row is not None else None

    def goods_known(self, goods_id: str) -> bool:
        query = select(stock.c.goods_id).where(stock.c.goods_id == goods_id)
        with transaction(self.engine, DB, read_only=True) as conn:
            return conn.execute(query).first() is not None
