"""orders.fill_mode wide enough for "backorder" (genOrder's fill=backorder): VARCHAR(8) ->
VARCHAR(16). A BACKORDERED order's status fits the status column as it is (VARCHAR(16)), and
no check constraint names the statuses or the fills.

Revision ID: order_0010
Revises: order_0009
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "order_0010"
down_revision = "order_0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # SQLite keeps text of any length in a VARCHAR(n), so only PostgreSQL and MySQL/MariaDB
    # have a width to change (a plain ALTER on both; SQLite would rebuild the table for it).
    if op.get_bind().dialect.name == "sqlite":
        return
    op.alter_column(
        "orders",
        "fill_mode",
        type_=sa.String(16),
        existing_type=sa.String(8),
        existing_nullable=True,
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        return
    op.alter_column(
        "orders",
        "fill_mode",
        type_=sa.String(8),
        existing_type=sa.String(16),
        existing_nullable=True,
    )
