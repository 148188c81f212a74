"""orders: a hold's seconds to pay in (its clock starts when its deduction is confirmed), times
to the microsecond on MySQL/MariaDB; reconciler_fence: an epoch the operator can raise

Revision ID: order_0006
Revises: order_0005
Create Date: 2026-11-25
"""

from __future__ import annotations

import math

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "order_0006"
down_revision = "order_0005"
branch_labels = None
depends_on = None

TIMES = (("created_at", False), ("updated_at", False), ("pay_deadline", True), ("paid_at", True))


def upgrade() -> None:
    with op.batch_alter_table("orders") as batch:
        batch.add_column(sa.Column("pay_within", sa.Integer, nullable=True))
    with op.batch_alter_table("reconciler_fence") as batch:
        batch.add_column(sa.Column("epoch", sa.BigInteger, nullable=False, server_default="0"))
    bind = op.get_bind()
    if bind.dialect.name in ("mysql", "mariadb"):
        for column, nullable in TIMES:
            op.alter_column(
                "orders",
                column,
                type_=mysql.DATETIME(fsp=6),
                existing_type=sa.DateTime,
                existing_nullable=nullable,
            )
    # Holds written before: their seconds to pay in, from the deadline set at creation.
    orders = sa.table(
        "orders",
        sa.column("id", sa.String),
        sa.column("created_at", sa.DateTime),
        sa.column("pay_deadline", sa.DateTime),
        sa.column("pay_within", sa.Integer),
    )
    holds = bind.execute(
        sa.select(orders.c.id, orders.c.created_at, orders.c.pay_deadline).where(
            orders.c.pay_deadline.is_not(None)
        )
    ).all()
    for hold in holds:
        seconds = max(1, math.ceil((hold.pay_deadline - hold.created_at).total_seconds()))
        bind.execute(sa.update(orders).where(orders.c.id == hold.id).values(pay_within=seconds))


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name in ("mysql", "mariadb"):
        for column, nullable in TIMES:
            op.alter_column(
                "orders",
                column,
                type_=sa.DateTime,
                existing_type=mysql.DATETIME(fsp=6),
                existing_nullable=nullable,
            )
    with op.batch_alter_table("reconciler_fence") as batch:
        batch.drop_column("epoch")
    with op.batch_alter_table("orders") as batch:
        batch.drop_column("pay_within")
