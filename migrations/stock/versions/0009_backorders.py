"""backorders: each goods id's backorder limit and units owed, the lines waiting for units in
order, and each hand-over of arriving units to one of them (a ledger line)

Revision ID: stock_0009
Revises: stock_0008
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "stock_0009"
down_revision = "stock_0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    micro = op.get_bind().dialect.name in ("mysql", "mariadb")
    stamp = mysql.DATETIME(fsp=6) if micro else sa.DateTime()
    with op.batch_alter_table("stock") as batch:
        batch.add_column(
            sa.Column("backorder_limit", sa.BigInteger, nullable=False, server_default="0")
        )
        batch.add_column(sa.Column("owed", sa.BigInteger, nullable=False, server_default="0"))
    op.create_table(
        "backorder",
        sa.Column("flag", sa.String(64), primary_key=True),
        sa.Column("goods_id", sa.String(64), primary_key=True),
        sa.Column("position", sa.BigInteger, nullable=False),
        sa.Column("level_after", sa.BigInteger, nullable=False),
        sa.Column("wanted", sa.BigInteger, nullable=False),
        sa.Column("filled", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("created_at", stamp, nullable=False),
        sa.Column("updated_at", stamp, nullable=False),
    )
    op.create_index("ix_backorder_waiting", "backorder", ["goods_id", "state", "position"])
    op.create_table(
        "backorder_fill",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("flag", sa.String(64), nullable=False),
        sa.Column("goods_id", sa.String(64), nullable=False),
        sa.Column("num", sa.BigInteger, nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("level_after", sa.BigInteger, nullable=False),
        sa.Column("location", sa.String(200), nullable=False),
        sa.Column("fence", sa.BigInteger, nullable=True),
        sa.Column("created_at", stamp, nullable=False),
        sa.UniqueConstraint("goods_id", "seq", name="uq_backorder_fill_goods_seq"),
    )
    op.create_index("ix_backorder_fill_flag", "backorder_fill", ["flag"])


def downgrade() -> None:
    op.drop_index("ix_backorder_fill_flag", table_name="backorder_fill")
    op.drop_table("backorder_fill")
    op.drop_index("ix_backorder_waiting", table_name="backorder")
    op.drop_table("backorder")
    with op.batch_alter_table("stock") as batch:
        batch.drop_column("owed")
        batch.drop_column("backorder_limit")
