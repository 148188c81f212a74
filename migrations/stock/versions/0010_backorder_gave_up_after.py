"""backorder.gave_up_after: a cancelled line's place in its goods id's ledger (the last seq when
it gave up), so a give-up that returned nothing, and wrote no ledger line, is still ordered
against the entries of its own commit (the checks B1 and B2 used its timestamp before, which
one commit shares with every entry of it). Nullable: lines cancelled before it have none.

Revision ID: stock_0010
Revises: stock_0009
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "stock_0010"
down_revision = "stock_0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("backorder") as batch:
        batch.add_column(sa.Column("gave_up_after", sa.BigInteger, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("backorder") as batch:
        batch.drop_column("gave_up_after")
