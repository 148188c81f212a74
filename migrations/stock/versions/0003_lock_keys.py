"""lock_keys: the unique-key locks of LOCK_BACKEND=unique-key

Revision ID: stock_0003
Revises: stock_0002
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "stock_0003"
down_revision = "stock_0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lock_keys",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True),
        sa.Column("name", sa.String(80), nullable=False),
        sa.Column("holder", sa.String(80), nullable=False),
        sa.Column("expires_at", sa.Double, nullable=False),
        sa.UniqueConstraint("name", name="uq_lock_keys_name"),
        sqlite_autoincrement=True,
    )


def downgrade() -> None:
    op.drop_table("lock_keys")
