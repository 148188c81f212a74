"""hold_release: the paid holds whose release the stock service has not acknowledged yet

Revision ID: order_0007
Revises: order_0006
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "order_0007"
down_revision = "order_0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    micro = op.get_bind().dialect.name in ("mysql", "mariadb")
    op.create_table(
        "hold_release",
        sa.Column("order_id", sa.String(32), primary_key=True),
        sa.Column("created_at", mysql.DATETIME(fsp=6) if micro else sa.DateTime, nullable=False),
    )
    op.create_index("ix_hold_release_created", "hold_release", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_hold_release_created", table_name="hold_release")
    op.drop_table("hold_release")
