"""Identifiers, references and keys compared exactly on MySQL and MariaDB, and a line's parts
stored whole.

MySQL's and MariaDB's default collations fold case and accents and pad trailing spaces: a
transfer whose reference differed from another's only in case missed the lookup of its id
(a hash of the exact reference) and then hit the unique key on `reference`, and its hold
re-planned until the lock was lost. Every identifier, reference and key column becomes binary
and NO PAD there (shared/database/columns.py), as PostgreSQL and SQLite compare already; primary
keys, unique keys and indexes are rebuilt by the ALTER with the columns.

stock_outbox.location and backorder_fill.location hold a split line's parts
(`north:3,south:2`): varchar(200) refused four parts over 64-character locations, and the
sale with it. They become TEXT (LONGTEXT on MySQL and MariaDB). SQLite ignores both lengths
and collations of these kinds, so nothing changes there.

Revision ID: stock_0011
Revises: stock_0010
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.engine import Dialect

revision = "stock_0011"
down_revision = "stock_0010"
branch_labels = None
depends_on = None

ID, NEW_ID, REFERENCE, LOCK_NAME = 64, 32, 200, 80
# table: (column, length, nullable), as the earlier revisions made them
EXACT: dict[str, list[tuple[str, int, bool]]] = {
    "stock": [("goods_id", ID, False)],
    "stock_flow": [("id", NEW_ID, False), ("flag", ID, False), ("goods_id", ID, False)],
    "flag_decision": [("flag", ID, False)],
    "stock_return": [("id", NEW_ID, False), ("flag", ID, False), ("goods_id", ID, False)],
    "stock_adjustment": [
        ("id", NEW_ID, False),
        ("goods_id", ID, False),
        ("reference", REFERENCE, True),
        ("location", ID, True),
    ],
    "stock_outbox": [("goods_id", ID, False), ("flag", ID, True)],
    "location": [("location_id", ID, False)],
    "stock_location": [("goods_id", ID, False), ("location_id", ID, False)],
    "stock_allocation": [("flag", ID, False), ("goods_id", ID, False), ("location_id", ID, False)],
    "stock_transfer": [
        ("transfer_id", ID, False),
        ("reference", REFERENCE, False),
        ("goods_id", ID, False),
        ("from_location", ID, False),
        ("to_location", ID, False),
    ],
    "stock_transfer_leg": [
        ("transfer_id", ID, False),
        ("goods_id", ID, False),
        ("location_id", ID, False),
    ],
    "backorder": [("flag", ID, False), ("goods_id", ID, False)],
    "backorder_fill": [("id", NEW_ID, False), ("flag", ID, False), ("goods_id", ID, False)],
    "lock_rows": [("name", LOCK_NAME, False)],
    "lock_keys": [("name", LOCK_NAME, False), ("holder", LOCK_NAME, False)],
}
PARTS = [("stock_outbox", "location", True), ("backorder_fill", "location", False)]


def _null(nullable: bool) -> str:
    return "NULL" if nullable else "NOT NULL"


def exact_collation(dialect: Dialect) -> str:
    """Binary and NO PAD: MariaDB's utf8mb4_nopad_bin, MySQL 8's utf8mb4_0900_bin (as
    shared.database.columns.exact_collation, which the tables declare; a migration stays as
    written)."""
    if getattr(dialect, "is_mariadb", False):
        return "utf8mb4_nopad_bin"
    version = dialect.server_version_info or (8, 0, 17)
    return "utf8mb4_0900_bin" if tuple(version) >= (8, 0, 17) else "utf8mb4_bin"


def _mysql(charset: str, collation: str, parts_type: str) -> None:
    """One ALTER per table (one rebuild of it), every column of it at once."""
    changes: dict[str, list[str]] = {}
    for table, columns in EXACT.items():
        for name, length, nullable in columns:
            changes.setdefault(table, []).append(
                f"MODIFY {name} VARCHAR({length}) CHARACTER SET {charset} COLLATE {collation} "
                + _null(nullable)
            )
    for table, name, nullable in PARTS:
        changes.setdefault(table, []).append(f"MODIFY {name} {parts_type} {_null(nullable)}")
    for table, clauses in changes.items():
        op.execute(f"ALTER TABLE {table} " + ", ".join(clauses))


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name in ("mysql", "mariadb"):
        _mysql("utf8mb4", exact_collation(bind.dialect), "LONGTEXT CHARACTER SET utf8mb4")
    elif bind.dialect.name == "postgresql":
        for table, name, _ in PARTS:
            op.alter_column(table, name, type_=sa.Text(), existing_type=sa.String(200))


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name in ("mysql", "mariadb"):
        # The database's default collation again: refused if two keys written since differ
        # only in case, an accent or a trailing space, or a line's parts pass 200 characters.
        query = sa.text("SELECT @@character_set_database, @@collation_database")
        charset, collation = bind.execute(query).one()
        _mysql(charset, collation, f"VARCHAR(200) CHARACTER SET {charset} COLLATE {collation}")
    elif bind.dialect.name == "postgresql":
        for table, name, _ in PARTS:
            op.alter_column(table, name, type_=sa.String(200), existing_type=sa.Text())
