"""stock and stock_flow

Revision ID: stock_0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "stock_0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "stock",
        sa.Column("goods_id", sa.String(64), primary_key=True),
        sa.Column("num", sa.BigInteger, nullable=False),
        sa.Column("seeded_num", sa.BigInteger, nullable=False),
        sa.Column("seed_version", sa.Integer, nullable=False),
        sa.Column("fence", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("updated_at", sa.DateTime, nullable=False),
    )
    op.create_table(
        "stock_flow",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("flag", sa.String(64), nullable=False),
        sa.Column("goods_id", sa.String(64), nullable=False),
        sa.Column("num", sa.Integer, nullable=False),
        sa.Column("seed_version", sa.Integer, nullable=False),
        sa.Column("fence", sa.BigInteger, nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.UniqueConstraint("flag", "goods_id", name="uq_stock_flow_flag_goods"),
    )
    op.create_index("ix_stock_flow_goods_id", "stock_flow", ["goods_id"])


def downgrade() -> None:
    op.drop_index("ix_stock_flow_goods_id", table_name="stock_flow")
    op.drop_table("stock_flow")
    op.drop_table("stock")
