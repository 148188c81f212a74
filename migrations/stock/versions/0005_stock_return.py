"""stock_return: the stock a cancel gave back, one row per line of the deduction it undoes

Revision ID: stock_0005
Revises: stock_0004
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "stock_0005"
down_revision = "stock_0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "stock_return",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("flag", sa.String(64), nullable=False),
        sa.Column("goods_id", sa.String(64), nullable=False),
        sa.Column("num", sa.Integer, nullable=False),
        sa.Column("seed_version", sa.Integer, nullable=False),
        sa.Column("fence", sa.BigInteger, nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.UniqueConstraint("flag", "goods_id", name="uq_stock_return_flag_goods"),
    )
    op.create_index("ix_stock_return_goods_id", "stock_return", ["goods_id"])


def downgrade() -> None:
    op.drop_index("ix_stock_return_goods_id", table_name="stock_return")
    op.drop_table("stock_return")
