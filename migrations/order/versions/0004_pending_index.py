"""orders (status, created_at): the reconciler pages through the PENDING orders, oldest first

Revision ID: order_0004
Revises: order_0003
Create Date: 2026-11-24
"""

from __future__ import annotations

from alembic import op

revision = "order_0004"
down_revision = "order_0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_orders_status_created", "orders", ["status", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_orders_status_created", table_name="orders")
