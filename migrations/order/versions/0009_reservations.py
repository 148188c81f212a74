"""reservations and reservation_lines: units held for a cart, released exactly once

Revision ID: order_0009
Revises: order_0008
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "order_0009"
down_revision = "order_0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    micro = op.get_bind().dialect.name in ("mysql", "mariadb")
    stamp = mysql.DATETIME(fsp=6) if micro else sa.DateTime  # to the microsecond everywhere
    op.create_table(
        "reservations",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("user_id", sa.String(64), nullable=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("reason", sa.String(200), nullable=True),
        sa.Column("ttl_seconds", sa.Integer, nullable=False),
        sa.Column("created_at", stamp, nullable=False),
        sa.Column("updated_at", stamp, nullable=False),
        sa.Column("expires_at", stamp, nullable=True),
        sa.Column("returned_at", stamp, nullable=True),
        sa.Column("allocations", sa.Text, nullable=True),
    )
    op.create_index("ix_reservations_state_updated", "reservations", ["state", "updated_at"])
    op.create_index("ix_reservations_state_expires", "reservations", ["state", "expires_at"])
    op.create_table(
        "reservation_lines",
        sa.Column(
            "reservation_id", sa.String(32), sa.ForeignKey("reservations.id"), primary_key=True
        ),
        sa.Column("goods_id", sa.String(64), primary_key=True),
        sa.Column("num", sa.Integer, nullable=False),
        sa.Column("location", sa.String(64), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("reservation_lines")
    op.drop_index("ix_reservations_state_expires", table_name="reservations")
    op.drop_index("ix_reservations_state_updated", table_name="reservations")
    op.drop_table("reservations")
