"""The one-database peer's tables and its one transaction per order.

An order is placed in one transaction: the order row (its Idempotency-Key unique), then for
each line in goods-id order `UPDATE stock SET num = num - n WHERE goods_id = g AND num >= n`,
the lines and one stock-flow row per line, commit. A line whose UPDATE matches no row rolls
the whole transaction back: nothing was deducted, and the refusal is recorded in a second
transaction (a FAILED order), so that a repeat of its key answers it too.

Why it never oversells: on PostgreSQL (READ COMMITTED) an UPDATE that waited for another
transaction's row lock evaluates its WHERE again on the row as that transaction committed it,
so `num >= n` is always checked against the latest level, under the row lock; on SQLite a
writing transaction starts with BEGIN IMMEDIATE (shared/database/engines.py), so writers take turns.
Lines are deducted in goods-id order, so two orders never wait for each other's rows in a circle.
Why it deducts once per key: the order row is inserted first, in the same transaction as the
deduction, and its key is unique: a second insert of the key waits for the first transaction and
then fails, or (after a rollback) takes its place.

The tables are the peer's own (peer_*), beside the project's in the bench's database."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from shared.database.engines import transaction, utcnow
from shared.ids import new_id

CONFIRMED, FAILED = "CONFIRMED", "FAILED"
INSUFFICIENT_STOCK = "insufficient_stock"

metadata = sa.MetaData()

orders = sa.Table(
    "peer_orders",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("user_id", sa.String(64), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),  # CONFIRMED or FAILED: nothing between
    sa.Column("reason", sa.String(32), nullable=True),
    sa.Column("idempotency_key", sa.String(128), nullable=True, unique=True),
    sa.Column("request_hash", sa.String(64), nullable=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
)

order_lines = sa.Table(
    "peer_order_lines",
    metadata,
    sa.Column("order_id", sa.String(32), sa.ForeignKey("peer_orders.id"), primary_key=True),
    sa.Column("goods_id", sa.String(64), primary_key=True),
    sa.Column("num", sa.Integer, nullable=False),
)

stock = sa.Table(
    "peer_stock",
    metadata,
    sa.Column("goods_id", sa.String(64), primary_key=True),
    sa.Column("num", sa.BigInteger, nullable=False),
)

stock_flow = sa.Table(
    "peer_stock_flow",
    metadata,
    # One flow per (order, goods id): a second deduction of an order's line fails here.
    sa.Column("order_id", sa.String(32), primary_key=True),
    sa.Column("goods_id", sa.String(64), primary_key=True),
    sa.Column("num", sa.Integer, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
)

_DEDUCT = (
    stock.update()
    .where(stock.c.goods_id == sa.bindparam("g"), stock.c.num >= sa.bindparam("n"))
    .values(num=stock.c.num - sa.bindparam("n"))
)
_INSERT_ORDER = orders.insert()
_INSERT_LINES = order_lines.insert()
_INSERT_FLOWS = stock_flow.insert()


def create_tables(engine: sa.Engine) -> None:
    metadata.create_all(engine)


def set_stock(engine: sa.Engine, levels: dict[str, int]) -> None:
    """Each goods id's level set (inserted or overwritten)."""
    with transaction(engine, "database") as conn:
        for goods_id, num in levels.items():
            updated = conn.execute(
                stock.update().where(stock.c.goods_id == goods_id).values(num=num)
            )
            if updated.rowcount == 0:
                conn.execute(stock.insert().values(goods_id=goods_id, num=num))


@dataclass
class Outcome:
    """What a genOrder answers: the order's id and status, or an error (422)."""

    code: int
    body: dict[str, Any]
    replayed: bool = False
    headers: dict[str, str] = field(default_factory=dict)


class _Short(Exception):
    """A line's UPDATE matched no row: not enough stock, or no such goods id."""


def fingerprint(user_id: str, lines: dict[str, int]) -> str:
    canonical = json.dumps({"userId": user_id, "lines": lines}, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def place(engine: sa.Engine, user_id: str, lines: dict[str, int], key: str | None) -> Outcome:
    """One order, in one transaction: 200 CONFIRMED, 409 FAILED (insufficient_stock), 422
    (unknown goods ids, or the key reused with another body); a repeat of a key answers the
    first order."""
    order_id = new_id()
    request_hash = fingerprint(user_id, lines) if key else None
    now = utcnow()
    goods = sorted(lines)
    try:
        with transaction(engine, "database") as conn:
            conn.execute(
                _INSERT_ORDER,
                {
                    "id": order_id,
                    "user_id": user_id,
                    "status": CONFIRMED,
                    "reason": None,
                    "idempotency_key": key,
                    "request_hash": request_hash,
                    "created_at": now,
                },
            )
            for goods_id in goods:
                if conn.execute(_DEDUCT, {"g": goods_id, "n": lines[goods_id]}).rowcount != 1:
                    raise _Short(goods_id)  # rolls back: nothing of this order was deducted
            rows = [{"order_id": order_id, "goods_id": g, "num": lines[g]} for g in goods]
            conn.execute(_INSERT_LINES, rows)
            conn.execute(_INSERT_FLOWS, [{**row, "created_at": now} for row in rows])
    except IntegrityError:
        if key is None:
            raise
        return replay(engine, key, request_hash)
    except _Short:
        return refuse(engine, order_id, user_id, lines, key, request_hash)
    return Outcome(200, _state(order_id, CONFIRMED))


def refuse(
    engine: sa.Engine,
    order_id: str,
    user_id: str,
    lines: dict[str, int],
    key: str | None,
    request_hash: str | None,
) -> Outcome:
    """The order was rolled back: say which lines fell short, and record it FAILED."""
    goods = sorted(lines)
    try:
        with transaction(engine, "database") as conn:
            found = dict(
                conn.execute(
                    sa.select(stock.c.goods_id, stock.c.num).where(stock.c.goods_id.in_(goods))
                ).all()
            )
            unknown = [g for g in goods if g not in found]
            if unknown:  # raised out of the block: the transaction is rolled back
                raise _Unknown(unknown)
            conn.execute(
                _INSERT_ORDER,
                {
                    "id": order_id,
                    "user_id": user_id,
                    "status": FAILED,
                    "reason": INSUFFICIENT_STOCK,
                    "idempotency_key": key,
                    "request_hash": request_hash,
                    "created_at": utcnow(),
                },
            )
            conn.execute(
                _INSERT_LINES,
                [{"order_id": order_id, "goods_id": g, "num": lines[g]} for g in goods],
            )
    except _Unknown as exc:
        return Outcome(422, {"error": "unknown goods ids", "goodsIds": exc.goods})
    except IntegrityError:
        if key is None:
            raise
        return replay(engine, key, request_hash)
    body = _state(order_id, FAILED, INSUFFICIENT_STOCK)
    body["shortfalls"] = [
        {"goodsId": g, "requested": lines[g], "available": int(found[g])}
        for g in goods
        if found[g] < lines[g]
    ]
    return Outcome(409, body)


class _Unknown(Exception):
    def __init__(self, goods: list[str]) -> None:
        super().__init__(", ".join(goods))
        self.goods = goods


def replay(engine: sa.Engine, key: str, request_hash: str | None) -> Outcome:
    """A repeat of a key: the first order's answer; the same key with another body is 422."""
    with transaction(engine, "database", read_only=True) as conn:
        row = conn.execute(
            sa.select(orders.c.id, orders.c.status, orders.c.reason, orders.c.request_hash).where(
                orders.c.idempotency_key == key
            )
        ).one()
    headers = {"Idempotent-Replayed": "true"}
    if row.request_hash != request_hash:
        body = {"error": "Idempotency-Key reused with another body", "orderId": row.id}
        return Outcome(422, body, True, headers)
    code = 200 if row.status == CONFIRMED else 409
    return Outcome(code, _state(row.id, row.status, row.reason), True, headers)


def _state(order_id: str, status: str, reason: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "orderId": order_id,
        "status": status,
        "result": "success" if status == CONFIRMED else "false",
    }
    if reason:
        body["reason"] = reason
    return body
