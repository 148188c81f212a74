"""flag_decision: the decision of every decided flag (deducted or voided), one row per flag

Revision ID: stock_0004
Revises: stock_0003
Create Date: 2026-11-24

Existing flows are carried over: every flag with flows was deducted.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "stock_0004"
down_revision = "stock_0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "flag_decision",
        sa.Column("flag", sa.String(64), primary_key=True),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("reason", sa.String(200), nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )
    op.execute(
        "INSERT INTO flag_decision (flag, outcome, created_at) "
        "SELECT flag, 'deducted', MIN(created_at) FROM stock_flow GROUP BY flag"
    )


def downgrade() -> None:
    op.drop_table("flag_decision")
