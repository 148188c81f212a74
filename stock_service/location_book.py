"""The stock database's locations as the admin and the readers see them (docs/locations.md):
the location rows, a goods id's levels per location, its units in transit, a transfer. What a
batch reads and writes under its hold is stock_service/location_store.py."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from shared.db import transaction
from shared.db import utcnow as now
from stock_service.core.places import DEFAULT, DEFAULT_PLACE, Place
from stock_service.core.transfers import IN_TRANSIT, Transfer
from stock_service.location_store import as_transfer
from stock_service.tables import location, stock, stock_location, stock_transfer

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

    def levels(self, goods_id: str, total: int, held: int) -> tuple[list[dict[str, Any]], int]:
        """The goods id's level and held units per location, the default's being what its
        total leaves; and its units in transit."""
        named = select(stock_location).where(stock_location.c.goods_id == goods_id)
        moving = select(func.coalesce(func.sum(stock_transfer.c.units), 0)).where(
            stock_transfer.c.goods_id == goods_id, stock_transfer.c.state == IN_TRANSIT
        )
        with transaction(self.engine, DB, read_only=True) as conn:
            rows = list(conn.execute(named.order_by(stock_location.c.location_id)))
            in_transit = int(conn.execute(moving).scalar_one())
        default = {
            "location": DEFAULT,
            "num": total - sum(int(r.num) for r in rows),
            "held": held - sum(int(r.held) for r in rows),
        }
        others = [{"location": r.location_id, "num": int(r.num), "held": int(r.held)} for r in rows]
        return [default, *others], in_transit

    def transfer(self, transfer_id: str) -> Transfer | None:
        query = select(stock_transfer).where(stock_transfer.c.transfer_id == transfer_id)
        with transaction(self.engine, DB, read_only=True) as conn:
            row = conn.execute(query).first()
        return as_transfer(row) if row is not None else None

    def goods_known(self, goods_id: str) -> bool:
        query = select(stock.c.goods_id).where(stock.c.goods_id == goods_id)
        with transaction(self.engine, DB, read_only=True) as conn:
            return conn.execute(query).first() is not None
