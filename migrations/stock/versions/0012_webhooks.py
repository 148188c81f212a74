"""Webhooks: the subscriptions of receivers of the stock events over HTTP, and one delivery
row per event and subscription (pending, delivered or dead), fanned out from stock_outbox by
the elected deliverer (stock_service/webhooks/, docs/webhooks.md).

Revision ID: stock_0012
Revises: stock_0011
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeEngine

revision = "stock_0012"
down_revision = "stock_0011"
branch_labels = None
depends_on = None

IDENTIFIER, NEW_ID = 64, 32
# Microseconds on MySQL and MariaDB too (shared.database.engines.Timestamp, as written then).
TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
# Long text: LONGTEXT on MySQL and MariaDB (shared.database.columns.joined_text).
TEXT = sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")


def exact(dialect: Dialect, length: int) -> TypeEngine[str]:
    """An identifier compared byte for byte (as stock_0011 made the others): binary and NO PAD
    on MySQL and MariaDB."""
    if dialect.name not in ("mysql", "mariadb"):
        return sa.String(length)
    if getattr(dialect, "is_mariadb", False):
        collation = "utf8mb4_nopad_bin"
    else:
        version = dialect.server_version_info or (8, 0, 17)
        collation = "utf8mb4_0900_bin" if tuple(version) >= (8, 0, 17) else "utf8mb4_bin"
    return mysql.VARCHAR(length, charset="utf8mb4", collation=collation)


def upgrade() -> None:
    dialect = op.get_bind().dialect
    op.create_table(
        "webhook_subscription",
        sa.Column("id", exact(dialect, NEW_ID), primary_key=True),
        sa.Column("url", sa.String(2048), nullable=False),
        sa.Column("secret", sa.String(256), nullable=False),
        sa.Column("kinds", sa.String(200), nullable=False),
        sa.Column("goods_ids", TEXT, nullable=False),
        sa.Column("fanned_to", sa.BigInteger, nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
    )
    op.create_table(
        "webhook_delivery",
        sa.Column("subscription_id", exact(dialect, NEW_ID), primary_key=True),
        sa.Column("event_id", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("goods_id", exact(dialect, IDENTIFIER), nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("next_attempt_at", TIMESTAMP, nullable=False),
        sa.Column("last_error", sa.String(200), nullable=True),
        sa.Column("first_tried_at", TIMESTAMP, nullable=True),
        sa.Column("done_at", TIMESTAMP, nullable=True),
    )
    op.create_index(
        "ix_webhook_delivery_line",
        "webhook_delivery",
        ["state", "subscription_id", "goods_id", "event_id"],
    )
    op.create_index("ix_webhook_delivery_due", "webhook_delivery", ["state", "next_attempt_at"])


def downgrade() -> None:
    op.drop_table("webhook_delivery")
    op.drop_table("webhook_subscription")
