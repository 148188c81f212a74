"""orders: pay_deadline and paid_at for holds (genOrder's payWithinSeconds), and the index the
reconciler expires them by

Revision ID: order_0005
Revises: order_0004
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "order_0005"
down_revision = "order_0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("orders") as batch:
        batch.add_column(sa.Column("pay_deadline", sa.DateTime, nullable=True))
        batch.add_column(sa.Column("paid_at", sa.DateTime, nullable=True))
    op.create_index("ix_orders_status_deadline", "orders", ["status", "pay_deadline"])


def downgrade() -> None:
    op.drop_index("ix_orders_status_deadline", table_name="orders")
    with op.batch_alter_table("orders") as batch:
        batch.drop_column("paid_at")
        batch.drop_column("pay_deadline")
