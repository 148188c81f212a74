"""Partial fill and named locations: orders.fill_mode, order_details.location and filled, and
order_allocation (where a confirmed order's units were taken from)

Revision ID: order_0008
Revises: order_0007
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "order_0008"
down_revision = "order_0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (nullable, no default) works on SQLite, PostgreSQL and MySQL alike, and
    # leaves every order placed before as it was: all or nothing, no location, filled whole.
    op.add_column("orders", sa.Column("fill_mode", sa.String(8), nullable=True))
    op.add_column("order_details", sa.Column("location", sa.String(64), nullable=True))
    op.add_column("order_details", sa.Column("filled", sa.Integer, nullable=True))
    op.create_table(
        "order_allocation",
        sa.Column("order_id", sa.String(32), sa.ForeignKey("orders.id"), primary_key=True),
        sa.Column("goods_id", sa.String(64), primary_key=True),
        sa.Column("location_id", sa.String(64), primary_key=True),
        sa.Column("num", sa.Integer, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("order_allocation")
    with op.batch_alter_table("order_details") as batch:
        batch.drop_column("filled")
        batch.drop_column("location")
    with op.batch_alter_table("orders") as batch:
        batch.drop_column("fill_mode")
