"""stock in more than one place: locations, each goods id's level per named location, where
each deduction's units came from, transfers between locations and their two ledger legs; the
location of adjustments and stock events

A stock already there stays in the default location, which has no row (its level is the goods
id's total less its named locations'), so nothing is copied.

Revision ID: stock_0008
Revises: stock_0007
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "stock_0008"
down_revision = "stock_0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    micro = op.get_bind().dialect.name in ("mysql", "mariadb")
    stamp = mysql.DATETIME(fsp=6) if micro else sa.DateTime()
    with op.batch_alter_table("stock_adjustment") as batch:
        batch.add_column(sa.Column("location", sa.String(64), nullable=True))
    with op.batch_alter_table("stock_outbox") as batch:
        batch.add_column(sa.Column("location", sa.String(200), nullable=True))
    op.create_table(
        "location",
        sa.Column("location_id", sa.String(64), primary_key=True),
        sa.Column("priority", sa.Integer, nullable=False),
        sa.Column("active", sa.Boolean, nullable=False),
        sa.Column("updated_at", stamp, nullable=False),
    )
    op.create_table(
        "stock_location",
        sa.Column("goods_id", sa.String(64), primary_key=True),
        sa.Column("location_id", sa.String(64), primary_key=True),
        sa.Column("num", sa.BigInteger, nullable=False),
        sa.Column("held", sa.BigInteger, nullable=False, server_default="0"),
    )
    op.create_table(
        "stock_allocation",
        sa.Column("flag", sa.String(64), primary_key=True),
        sa.Column("goods_id", sa.String(64), primary_key=True),
        sa.Column("location_id", sa.String(64), primary_key=True),
        sa.Column("num", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "stock_transfer",
        sa.Column("transfer_id", sa.String(64), primary_key=True),
        sa.Column("reference", sa.String(200), nullable=False, unique=True),
        sa.Column("goods_id", sa.String(64), nullable=False),
        sa.Column("from_location", sa.String(64), nullable=False),
        sa.Column("to_location", sa.String(64), nullable=False),
        sa.Column("units", sa.BigInteger, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("created_at", stamp, nullable=False),
        sa.Column("updated_at", stamp, nullable=False),
    )
    op.create_table(
        "stock_transfer_leg",
        sa.Column("transfer_id", sa.String(64), primary_key=True),
        sa.Column("leg", sa.String(8), primary_key=True),
        sa.Column("goods_id", sa.String(64), nullable=False),
        sa.Column("location_id", sa.String(64), nullable=False),
        sa.Column("delta", sa.BigInteger, nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("level_after", sa.BigInteger, nullable=False),
        sa.Column("fence", sa.BigInteger, nullable=True),
        sa.Column("created_at", stamp, nullable=False),
        sa.UniqueConstraint("goods_id", "seq", name="uq_stock_transfer_leg_goods_seq"),
    )


def downgrade() -> None:
    for table in ("stock_transfer_leg", "stock_transfer", "stock_allocation", "stock_location"):
        op.drop_table(table)
    op.drop_table("location")
    with op.batch_alter_table("stock_outbox") as batch:
        batch.drop_column("location")
    with op.batch_alter_table("stock_adjustment") as batch:
        batch.drop_column("location")
