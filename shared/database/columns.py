"""Column types both services' tables share: identifiers, references and keys that compare
exactly on every database, and text built from identifiers, sized by the input limits.

Exact comparison: a value the code looks up or keeps unique (a goods id, a flag, a transfer's
reference, an Idempotency-Key) is one value only if its bytes are the same, as Python compares
it. PostgreSQL (deterministic collations) and SQLite (BINARY) do so by default; MySQL and
MariaDB compare by the database's default collation, which folds case and accents and pads
with spaces (`PO-1`, `po-1` and `PO-1 ` are one key of utf8mb4_general_ci): a lookup of one
value misses while the unique key finds another. So their columns are declared binary and
NO PAD there: MariaDB's utf8mb4_nopad_bin, MySQL 8's utf8mb4_0900_bin (utf8mb4_bin, which
pads, only on a MySQL older than 8.0.17, which has neither)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import String, Text
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine

# The longest of each kind of value the edge accepts or the code makes.
IDENTIFIER = 64  # shared.web.schemas.IDENTIFIER_PATTERN: goods ids, flags, locations, user ids
NEW_ID = 32  # shared.ids.new_id (29 characters): order, reservation and row ids
REFERENCE = 200  # a transfer's or an adjustment's reference (shared.web.schemas.text(200))
IDEMPOTENCY_KEY = 128  # order_service.api.schemas.key_header: 1-128 printable characters
HASH = 64  # a request's fingerprint: a SHA-256 in hex

MARIADB_EXACT = "utf8mb4_nopad_bin"
MYSQL_EXACT = "utf8mb4_0900_bin"
MYSQL_OLD_EXACT = "utf8mb4_bin"  # before 8.0.17: binary, but trailing spaces are padded


def is_mysql(dialect: Dialect) -> bool:
    return dialect.name in ("mysql", "mariadb")


def exact_collation(dialect: Dialect) -> str:
    """The binary, NO PAD collation of this MySQL or MariaDB server (known once connected)."""
    if getattr(dialect, "is_mariadb", False):
        return MARIADB_EXACT
    version = dialect.server_version_info or (8, 0, 17)
    return MYSQL_EXACT if tuple(version) >= (8, 0, 17) else MYSQL_OLD_EXACT


class Exact(TypeDecorator[str]):
    """VARCHAR(length) compared byte for byte on every database (see the module)."""

    impl = String
    cache_ok = True

    def __init__(self, length: int) -> None:
        super().__init__(length)
        self.length = length

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if is_mysql(dialect):
            exact = mysql.VARCHAR(
                self.length, charset="utf8mb4", collation=exact_collation(dialect)
            )
            return dialect.type_descriptor(exact)
        return dialect.type_descriptor(String(self.length))


def joined_text() -> TypeEngine[str]:
    """Text built from a number of identifiers the limits do not bound tightly (a line's parts
    over its locations: `north:3,south:2`; a reservation's allocations as JSON). TEXT on
    PostgreSQL and SQLite; LONGTEXT on MySQL and MariaDB, whose TEXT ends at 64 KiB (a line
    of MAX_QUANTITY units may be split over as many 64-character locations: 670 KB)."""
    return Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")
