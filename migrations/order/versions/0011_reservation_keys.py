"""reservations.idempotency_key (unique) and request_hash: POST /reservations takes an
Idempotency-Key, so a buyer's retry of a reservation it got no answer for holds nothing twice.
Both nullable: a reservation made without a key has neither (and NULLs never collide in a
unique index on PostgreSQL, MariaDB or SQLite).

Revision ID: order_0011
Revises: order_0010
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "order_0011"
down_revision = "order_0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("reservations") as batch:
        batch.add_column(sa.Column("idempotency_key", sa.String(128), nullable=True))
        batch.add_column(sa.Column("request_hash", sa.String(64), nullable=True))
    op.create_index(
        "ux_reservations_idempotency_key", "reservations", ["idempotency_key"], unique=True
    )


def downgrade() -> None:
    op.drop_index("ux_reservations_idempotency_key", table_name="reservations")
    with op.batch_alter_table("reservations") as batch:
        batch.drop_column("request_hash")
        batch.drop_column("idempotency_key")
