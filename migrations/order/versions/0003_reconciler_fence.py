"""reconciler_fence: the fencing token of the elected reconciler

Revision ID: order_0003
Revises: order_0002
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "order_0003"
down_revision = "order_0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    table = op.create_table(
        "reconciler_fence",
        sa.Column("name", sa.String(40), primary_key=True),
        sa.Column("token", sa.BigInteger, nullable=False),
    )
    op.bulk_insert(table, [{"name": "reconciler", "token": 0}])


def downgrade() -> None:
    op.drop_table("reconciler_fence")
