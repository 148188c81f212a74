"""order_details.available and seed_version: the shortfall of a line refused for lack of stock

Revision ID: order_0002
Revises: order_0001
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "order_0002"
down_revision = "order_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (nullable, no default) works on SQLite, PostgreSQL and MySQL alike.
    op.add_column("order_details", sa.Column("available", sa.Integer, nullable=True))
    op.add_column("order_details", sa.Column("seed_version", sa.Integer, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("order_details") as batch:
        batch.drop_column("seed_version")
        batch.drop_column("available")
