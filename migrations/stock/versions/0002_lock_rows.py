"""lock_rows: the row locks of LOCK_BACKEND=database

Revision ID: stock_0002
Revises: stock_0001
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "stock_0002"
down_revision = "stock_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lock_rows",
        sa.Column("name", sa.String(80), primary_key=True),
        sa.Column("token", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("lock_rows")
