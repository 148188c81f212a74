"""The flash-sale rules per buyer: buyer_limits (a goods id's perBuyer and maxHeld), buyer_goods
(the row per buyer and goods id that the transaction creating an order or a reservation locks,
so one buyer's requests for one goods id are decided one after another), and the indexes their
counts read: a buyer's orders by status, a buyer's reservations by state.

Identifiers compare exactly on MySQL and MariaDB (binary, NO PAD), as revision order_0012 made
every other identifier column.

Revision ID: order_0013
Revises: order_0012
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Dialect

revision = "order_0013"
down_revision = "order_0012"
branch_labels = None
depends_on = None

ID = 64


def _exact_collation(dialect: Dialect) -> str:
    """As revision order_0012's: MariaDB's utf8mb4_nopad_bin, MySQL 8's utf8mb4_0900_bin."""
    if getattr(dialect, "is_mariadb", False):
        return "utf8mb4_nopad_bin"
    version = dialect.server_version_info or (8, 0, 17)
    return "utf8mb4_0900_bin" if tuple(version) >= (8, 0, 17) else "utf8mb4_bin"


def upgrade() -> None:
    dialect = op.get_bind().dialect
    micro = dialect.name in ("mysql", "mariadb")
    stamp = mysql.DATETIME(fsp=6) if micro else sa.DateTime
    identifier: sa.types.TypeEngine[str] = (
        mysql.VARCHAR(ID, charset="utf8mb4", collation=_exact_collation(dialect))
        if micro
        else sa.String(ID)
    )
    op.create_table(
        "buyer_limits",
        sa.Column("goods_id", identifier, primary_key=True),
        sa.Column("per_buyer", sa.BigInteger, nullable=True),
        sa.Column("max_held", sa.BigInteger, nullable=True),
        sa.Column("updated_at", stamp, nullable=False),
    )
    op.create_table(
        "buyer_goods",
        sa.Column("user_id", identifier, primary_key=True),
        sa.Column("goods_id", identifier, primary_key=True),
        sa.Column("created_at", stamp, nullable=False),
    )
    op.create_index("ix_orders_user_status", "orders", ["user_id", "status"])
    op.create_index("ix_reservations_user_state", "reservations", ["user_id", "state"])


def downgrade() -> None:
    op.drop_index("ix_reservations_user_state", "reservations")
    op.drop_index("ix_orders_user_status", "orders")
    op.drop_table("buyer_goods")
    op.drop_table("buyer_limits")
