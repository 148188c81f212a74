"""PB's reading of the order database (inventory/check/buyers.py) on SQLite, PostgreSQL and
MariaDB: every order with a line of the limited goods, with its buyer, status, reason and its
units of them (two lines of one goods id add up; lines of other goods are not read), and an
order named by id that has no line of them; then PB over what was read, valid, and violated
once a buyer's refused order is found CONFIRMED."""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa

from inventory.chaos.buyer_limits import limits_hold
from inventory.chaos.history import Op, classify
from inventory.chaos.verdict import VALID, VIOLATED
from inventory.check.buyers import read_buyer_orders
from order_service.storage.tables import order_details, orders
from shared.database.engines import make_engine, utcnow


def _order(conn: sa.Connection, user: str, status: str, reason: str | None, **lines: int) -> str:
    order_id = uuid.uuid4().hex
    now = utcnow()
    conn.execute(
        sa.insert(orders).values(
            id=order_id, user_id=user, status=status, reason=reason, created_at=now, updated_at=now
        )
    )
    for goods_id, num in lines.items():
        for part in (num // 2, num - num // 2) if num > 1 else (num,):
            conn.execute(
                sa.insert(order_details).values(
                    id=uuid.uuid4().hex, order_id=order_id, goods_id=goods_id, goods_num=part
                )
            )
    return order_id


@pytest.mark.parametrize("database_url", ["sqlite", "postgresql", "mysql"], indirect=True)
def test_the_orders_of_limited_goods_are_read_with_their_buyer_and_units(
    database_url: str,
) -> None:
    run = f"pb{uuid.uuid4().hex[:6]}"
    g, other = f"{run}-lim0", f"{run}-g000"
    engine = make_engine(database_url)
    try:
        with engine.begin() as conn:
            held = _order(conn, "b1", "CONFIRMED", None, **{g: 2, other: 1})
            refused = _order(conn, "b1", "FAILED", "limit_per_buyer", **{g: 1})
            cancelled = _order(conn, "b2", "CANCELLED", None, **{g: 2})
            elsewhere = _order(conn, "b3", "CONFIRMED", None, **{other: 5})
            tombstone = _order(conn, "b3", "CANCELLED", None)  # no line at all
        found = read_buyer_orders(engine, [g], [tombstone, refused])
        assert set(found) == {held, refused, cancelled, tombstone}
        assert elsewhere not in found
        assert (found[held].user, found[held].status, found[held].lines) == (
            "b1",
            "CONFIRMED",
            {g: 2},  # the lines of the goods asked for, added up
        )
        assert found[refused].refused_by_the_limit and found[refused].lines == {g: 1}
        assert found[cancelled].lines == {g: 2} and found[tombstone].lines == {}
        answer = Op("k", 0, False, {g: 1}, 0.0, 0.1, 409)
        answer.outcome, answer.order_id, answer.order_status, answer.reason = classify(
            409, {"orderId": refused, "status": "FAILED", "reason": "limit_per_buyer"}
        )
        assert limits_hold([answer], found, {g: 2}).verdict == VALID
        assert limits_hold([answer], found, {g: 1}).verdict == VIOLATED  # b1 holds 2
        with engine.begin() as conn:
            conn.execute(sa.update(orders).where(orders.c.id == refused).values(status="CONFIRMED"))
        found = read_buyer_orders(engine, [g], [refused])
        verdict = limits_hold([answer], found, {g: 2})
        assert verdict.verdict == VIOLATED
        assert verdict.counterexamples == [
            f"{g}/b1: 3 units in orders that count, limit 2",
            f"{refused}: answered 409 limit_per_buyer (key k), ends CONFIRMED limit_per_buyer",
        ]
    finally:
        engine.dispose()
