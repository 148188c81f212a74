"""Identifiers and keys compared exactly on MySQL and MariaDB, and a reservation's allocations
stored whole.

MySQL's and MariaDB's default collations fold case and accents and pad trailing spaces, so two
Idempotency-Keys that differ only in case (`K-1`, `k-1`) were one key of the unique index, and
an order id or a user id looked up in another case was found. Every identifier and key column
becomes binary and NO PAD there (shared/database/columns.py), as PostgreSQL and SQLite compare
already. The foreign keys to orders.id and reservations.id join columns that change together:
MariaDB changes neither side while the key exists (even with its checks off), so they are dropped
for the ALTERs and made again after, by the names the database gave them.

reservations.allocations (JSON of where each unit is) was TEXT, 64 KiB on MySQL and MariaDB:
a hundred lines of 64-character goods ids each split over four 64-character locations is more.
It becomes LONGTEXT there. Nothing changes on PostgreSQL or SQLite.

Revision ID: order_0012
Revises: order_0011
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.engine import Dialect

revision = "order_0012"
down_revision = "order_0011"
branch_labels = None
depends_on = None

ID, NEW_ID, KEY, HASH = 64, 32, 128, 64
# table: (column, length, nullable), as the earlier revisions made them
EXACT: dict[str, list[tuple[str, int, bool]]] = {
    "orders": [
        ("id", NEW_ID, False),
        ("user_id", ID, False),
        ("idempotency_key", KEY, True),
        ("request_hash", HASH, True),
    ],
    "order_details": [
        ("id", NEW_ID, False),
        ("order_id", NEW_ID, False),
        ("goods_id", ID, False),
        ("location", ID, True),
    ],
    "order_allocation": [
        ("order_id", NEW_ID, False),
        ("goods_id", ID, False),
        ("location_id", ID, False),
    ],
    "hold_release": [("order_id", NEW_ID, False)],
    "reservations": [
        ("id", NEW_ID, False),
        ("user_id", ID, True),
        ("idempotency_key", KEY, True),
        ("request_hash", HASH, True),
    ],
    "reservation_lines": [
        ("reservation_id", NEW_ID, False),
        ("goods_id", ID, False),
        ("location", ID, True),
    ],
}


FOREIGN_KEYS = {"order_details", "order_allocation", "reservation_lines"}


def _foreign_keys(bind: sa.Connection) -> list[tuple[str, str, str, str, str]]:
    """(name, table, column, referred table, referred column) of this revision's tables."""
    query = sa.text(
        "SELECT constraint_name, table_name, column_name, referenced_table_name, "
        "referenced_column_name FROM information_schema.key_column_usage "
        "WHERE table_schema = DATABASE() AND referenced_table_name IS NOT NULL"
    )
    rows = bind.execute(query).all()
    return [(r[0], r[1], r[2], r[3], r[4]) for r in rows if r[1] in FOREIGN_KEYS]


def exact_collation(dialect: Dialect) -> str:
    """Binary and NO PAD: MariaDB's utf8mb4_nopad_bin, MySQL 8's utf8mb4_0900_bin (as
    shared.database.columns.exact_collation, which the tables declare; a migration stays as
    written)."""
    if getattr(dialect, "is_mariadb", False):
        return "utf8mb4_nopad_bin"
    version = dialect.server_version_info or (8, 0, 17)
    return "utf8mb4_0900_bin" if tuple(version) >= (8, 0, 17) else "utf8mb4_bin"


def _mysql(charset: str, collation: str, allocations: str) -> None:
    """One ALTER per table (one rebuild of it), every column of it at once."""
    keys = _foreign_keys(op.get_bind())
    for name, table, *_ in keys:
        op.drop_constraint(name, table, type_="foreignkey")
    for table, columns in EXACT.items():
        clauses = [
            f"MODIFY {name} VARCHAR({length}) CHARACTER SET {charset} COLLATE {collation} "
            + ("NULL" if nullable else "NOT NULL")
            for name, length, nullable in columns
        ]
        if table == "reservations":
            clauses.append(f"MODIFY allocations {allocations} NULL")
        op.execute(f"ALTER TABLE {table} " + ", ".join(clauses))
    for name, table, column, referred, referred_column in keys:
        op.create_foreign_key(name, table, referred, [column], [referred_column])


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name in ("mysql", "mariadb"):
        _mysql("utf8mb4", exact_collation(bind.dialect), "LONGTEXT CHARACTER SET utf8mb4")


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name in ("mysql", "mariadb"):
        # The database's default collation again: refused if two keys written since differ
        # only in case or a trailing space, or allocations pass 64 KiB.
        query = sa.text("SELECT @@character_set_database, @@collation_database")
        charset, collation = bind.execute(query).one()
        _mysql(charset, collation, f"TEXT CHARACTER SET {charset} COLLATE {collation}")
