"""the ledger: each goods id's entries numbered (seq) with the level each left, adjustments,
units held by unpaid holds, low-stock thresholds, the outbox of stock events; times to the
microsecond on MySQL/MariaDB

Every goods id already stocked starts its ledger with one adjustment of reason `set` (reference
"the ledger started"), whose delta counts everything before it: the level now plus what was
deducted minus what was returned, so that from then on, for all time, the sum of adjustments -
the level = flows - returns. Flows and returns from before the ledger keep no seq.

Revision ID: stock_0006
Revises: stock_0005
Create Date: 2026-11-25
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "stock_0006"
down_revision = "stock_0005"
branch_labels = None
depends_on = None

TIMES = (
    ("stock", "updated_at"),
    ("stock_flow", "created_at"),
    ("stock_return", "created_at"),
    ("flag_decision", "created_at"),
)
SERIAL = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    bind = op.get_bind()
    micro = bind.dialect.name in ("mysql", "mariadb")
    stamp = mysql.DATETIME(fsp=6) if micro else sa.DateTime()
    with op.batch_alter_table("stock") as batch:
        batch.add_column(sa.Column("ledger_seq", sa.BigInteger, nullable=False, server_default="0"))
        batch.add_column(sa.Column("held", sa.BigInteger, nullable=False, server_default="0"))
        batch.add_column(sa.Column("low_stock", sa.BigInteger, nullable=True))
    for table in ("stock_flow", "stock_return"):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("seq", sa.BigInteger, nullable=True))
            batch.add_column(sa.Column("level_after", sa.BigInteger, nullable=True))
        op.create_index(f"ix_{table}_goods_seq", table, ["goods_id", "seq"])
    with op.batch_alter_table("flag_decision") as batch:
        batch.add_column(sa.Column("held", sa.Boolean, nullable=False, server_default=sa.false()))
    if micro:
        for table, column in TIMES:
            op.alter_column(
                table, column, type_=stamp, existing_type=sa.DateTime, existing_nullable=False
            )
    adjustments = op.create_table(
        "stock_adjustment",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("goods_id", sa.String(64), nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("delta", sa.BigInteger, nullable=False),
        sa.Column("level_after", sa.BigInteger, nullable=False),
        sa.Column("reason", sa.String(16), nullable=False),
        sa.Column("reference", sa.String(200), nullable=True),
        sa.Column("expected", sa.BigInteger, nullable=True),
        sa.Column("fence", sa.BigInteger, nullable=True),
        sa.Column("created_at", stamp, nullable=False),
        sa.UniqueConstraint("goods_id", "seq", name="uq_stock_adjustment_goods_seq"),
    )
    op.create_table(
        "stock_outbox",
        sa.Column("id", SERIAL, primary_key=True, autoincrement=True),
        sa.Column("goods_id", sa.String(64), nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("delta", sa.BigInteger, nullable=False),
        sa.Column("level", sa.BigInteger, nullable=False),
        sa.Column("flag", sa.String(64), nullable=True),
        sa.Column("reason", sa.String(200), nullable=True),
        sa.Column("created_at", stamp, nullable=False),
        sa.Column("sent_at", stamp, nullable=True),
    )
    op.create_index("ix_stock_outbox_unsent", "stock_outbox", ["sent_at", "id"])
    _start_the_ledger(bind, adjustments)


def _start_the_ledger(bind: sa.Connection, adjustments: sa.Table) -> None:
    """One `set` adjustment per goods id stocked before the ledger (see the docstring)."""
    now = datetime.now(UTC).replace(tzinfo=None)
    levels = bind.execute(sa.text("SELECT goods_id, num FROM stock")).all()
    moved: dict[str, int] = {}
    for table, sign in (("stock_flow", 1), ("stock_return", -1)):
        for goods_id, total in bind.execute(
            sa.text(f"SELECT goods_id, SUM(num) FROM {table} GROUP BY goods_id")
        ):
            moved[goods_id] = moved.get(goods_id, 0) + sign * int(total or 0)
    rows = [
        {
            "id": uuid.uuid4().hex,
            "goods_id": goods_id,
            "seq": 1,
            "delta": int(num) + moved.get(goods_id, 0),
            "level_after": int(num),
            "reason": "set",
            "reference": "the ledger started",
            "expected": None,
            "fence": None,
            "created_at": now,
        }
        for goods_id, num in levels
    ]
    if rows:
        op.bulk_insert(adjustments, rows)
        bind.execute(sa.text("UPDATE stock SET ledger_seq = 1"))


def downgrade() -> None:
    op.drop_index("ix_stock_outbox_unsent", table_name="stock_outbox")
    op.drop_table("stock_outbox")
    op.drop_table("stock_adjustment")
    with op.batch_alter_table("flag_decision") as batch:
        batch.drop_column("held")
    for table in ("stock_flow", "stock_return"):
        op.drop_index(f"ix_{table}_goods_seq", table_name=table)
        with op.batch_alter_table(table) as batch:
            batch.drop_column("level_after")
            batch.drop_column("seq")
    with op.batch_alter_table("stock") as batch:
        batch.drop_column("low_stock")
        batch.drop_column("held")
        batch.drop_column("ledger_seq")
