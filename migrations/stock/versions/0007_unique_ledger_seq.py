"""one seq per ledger line: stock_flow and stock_return unique on (goods_id, seq), as
stock_adjustment already is

The fenced write keeps them unique by its compare-and-set on the row's seq; the unfenced
baseline (stock_service/core/unfenced.py) takes its seqs from the database. With the constraint a
duplicate can only fail, never be written. Lines from before the ledger have no seq (NULL),
which a unique index allows many of. A database that an older unfenced run left with two lines
at one seq fails this migration: find them with
`SELECT goods_id, seq FROM stock_flow GROUP BY goods_id, seq HAVING count(*) > 1`.

Revision ID: stock_0007
Revises: stock_0006
Create Date: 2026-11-28
"""

from __future__ import annotations

from alembic import op

revision = "stock_0007"
down_revision = "stock_0006"
branch_labels = None
depends_on = None

TABLES = ("stock_flow", "stock_return")


def upgrade() -> None:
    for table in TABLES:
        op.drop_index(f"ix_{table}_goods_seq", table_name=table)
        op.create_index(f"uq_{table}_goods_seq", table, ["goods_id", "seq"], unique=True)


def downgrade() -> None:
    for table in TABLES:
        op.drop_index(f"uq_{table}_goods_seq", table_name=table)
        op.create_index(f"ix_{table}_goods_seq", table, ["goods_id", "seq"])
