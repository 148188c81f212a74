"""Backorder limits per location: a goods id's limit at one location (the units its lines
naming that location may owe at once, within the goods id's own), and the location a waiting
line named (it is handed units there only; null: a line that named none, as every line before
this revision, handed units at any active location).

The new columns are identifiers compared exactly on MySQL and MariaDB (binary, NO PAD), as
revision stock_0011 made the others.

Revision ID: stock_0013
Revises: stock_0012
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.engine import Dialect

revision = "stock_0013"
down_revision = "stock_0012"
branch_labels = None
depends_on = None


def _exact_collation(dialect: Dialect) -> str:
    """Binary and NO PAD (as stock_0011's; a migration stays as written)."""
    if getattr(dialect, "is_mariadb", False):
        return "utf8mb4_nopad_bin"
    version = dialect.server_version_info or (8, 0, 17)
    return "utf8mb4_0900_bin" if tuple(version) >= (8, 0, 17) else "utf8mb4_bin"


def upgrade() -> None:
    bind = op.get_bind()
    with op.batch_alter_table("backorder") as batch:
        batch.add_column(sa.Column("location", sa.String(64), nullable=True))
    op.create_table(
        "backorder_location_limit",
        sa.Column("goods_id", sa.String(64), primary_key=True),
        sa.Column("location_id", sa.String(64), primary_key=True),
        sa.Column("backorder_limit", sa.BigInteger, nullable=False),
    )
    if bind.dialect.name in ("mysql", "mariadb"):
        exact = f"CHARACTER SET utf8mb4 COLLATE {_exact_collation(bind.dialect)}"
        op.execute(f"ALTER TABLE backorder MODIFY location VARCHAR(64) {exact} NULL")
        op.execute(
            "ALTER TABLE backorder_location_limit "
            f"MODIFY goods_id VARCHAR(64) {exact} NOT NULL, "
            f"MODIFY location_id VARCHAR(64) {exact} NOT NULL"
        )


def downgrade() -> None:
    op.drop_table("backorder_location_limit")
    with op.batch_alter_table("backorder") as batch:
        batch.drop_column("location")
