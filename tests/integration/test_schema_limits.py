"""Every column of both services that stores an identifier, a reference, a key or text built
from them holds the longest value the code can write, and every identifier, reference and key
column compares exactly, on each SQL database, written and read through the real tables.

The longest values come from the limits: the edge's (64-character identifiers, 200-character
references of any unicode but control characters, 128-character Idempotency-Keys) and the
settings' (a line of MAX_QUANTITY units split over as many 64-character locations, MAX_LINES
lines). A column added without a longest value here fails the first test.

Exactness: each table gets a row in four "worlds" whose keys differ from the first world's only
in case, in an accent, or by a trailing space (references and keys; identifiers, which the edge
keeps to [A-Za-z0-9_.:-], differ otherwise). Every row must go in (no unique key folds two of
them into one) and a lookup by each key column must find its own row only. MariaDB's default
collation (utf8mb4_general_ci, PAD SPACE) fails both."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from annotated_types import MaxLen

from coordination.locks.tables import metadata as lock_metadata
from order_service.api.schemas import IdempotencyHeaders
from order_service.core.fills import FILLS
from order_service.core.statuses import (
    AWAITING_PAYMENT,
    BACKORDERED,
    CANCELLED,
    CANCELLING,
    CONFIRMED,
)
from order_service.core.statuses import FAILED as ORDER_FAILED
from order_service.core.statuses import PENDING as ORDER_PENDING
from order_service.reservations.store import CONSUMED, EXPIRED, FAILED, HELD, PENDING, RELEASED
from order_service.storage.tables import metadata as order_metadata
from shared.config.settings import Settings
from shared.contract import Decided
from shared.database.columns import Exact
from shared.web.schemas import IDENTIFIER_PATTERN
from stock_service.api.location_schemas import transfer_model
from stock_service.core.ledger_lines import EVENT_KINDS
from stock_service.core.model import REASONS
from stock_service.core.places import units_text
from stock_service.core.transfers import IN_TRANSIT, RECEIVED
from stock_service.storage.tables import metadata as stock_metadata
from stock_service.webhooks import MAX_URL, SECRET_MAX
from tests.conftest import unique

ORDER_STATUSES = (
    ORDER_PENDING,
    CONFIRMED,
    ORDER_FAILED,
    AWAITING_PAYMENT,
    BACKORDERED,
    CANCELLING,
    CANCELLED,
)
LIMITS = Settings()
IDENTIFIER = int(IDENTIFIER_PATTERN.split(",")[1].split("}")[0])  # [...]{1,64}


def max_length(field: Any) -> int:
    return next(m.max_length for m in field.metadata if isinstance(m, MaxLen))


REFERENCE = max_length(transfer_model(1).model_fields["reference"])
KEY = max_length(IdempotencyHeaders.model_fields["idempotency_key"])
NEW_ID = 32  # shared.ids.new_id: 29 characters
# The code cuts each reason it records at 200 characters: stock_service/storage/store.py
# (flag_decision: a refusal names every short line's goods id), stock_service/core/
# ledger_lines.py (a transfer's event: its reference in it), order_service/storage/transitions.py
# and order_service/reservations/store.py.
CUT = 200
REASONS_CUT = {"flag_decision", "stock_outbox", "orders", "reservations"}
# Lock names are goods ids or `global`; a holder is the lock backend's own id (80 at most).
LOCKS = {("lock_rows", "name"), ("lock_keys", "name"), ("lock_keys", "holder")}
# The other text columns hold one of the code's own words: the longest of each is written.
WORDS: dict[tuple[str, str], tuple[str, ...]] = {
    ("flag_decision", "outcome"): tuple(Decided),
    ("stock_adjustment", "reason"): REASONS,
    ("stock_outbox", "kind"): EVENT_KINDS,
    ("stock_transfer", "state"): (IN_TRANSIT, RECEIVED, "cancelled"),
    ("stock_transfer_leg", "leg"): ("out", "in"),
    ("backorder", "state"): ("waiting", "filled", "cancelled"),
    ("orders", "status"): ORDER_STATUSES,
    ("orders", "fill_mode"): FILLS,
    ("reconciler_fence", "name"): ("reconciler",),
    ("reservations", "state"): (PENDING, HELD, FAILED, CONSUMED, RELEASED, EXPIRED),
    ("webhook_delivery", "kind"): EVENT_KINDS,
    ("webhook_delivery", "state"): ("pending", "delivered", "dead"),
}
# Free text the code bounds by a rule of its own (stock_service/webhooks): a subscription's URL
# and secret, its kinds joined, a delivery's last error (cut). The longest is written.
BOUNDED = {
    ("webhook_subscription", "url"): MAX_URL,
    ("webhook_subscription", "secret"): SECRET_MAX,
    ("webhook_subscription", "kinds"): len(",".join(EVENT_KINDS)),
    ("webhook_delivery", "last_error"): CUT,
}
TABLES = [*stock_metadata.sorted_tables, *lock_metadata.sorted_tables]
TABLES += order_metadata.sorted_tables
WORLDS = ("first", "case", "accent", "space")


def longest_location(i: int) -> str:
    return f"loc{i:05d}".ljust(IDENTIFIER, "L")


def longest_parts() -> str:
    """A line of MAX_QUANTITY units taken one from each of as many 64-character locations
    (nothing in the settings bounds how many locations there are), as units_text writes it to
    backorder_fill; parts_text, to the outbox, writes the same text for a split (670 KB)."""
    return units_text((longest_location(i), 1) for i in range(LIMITS.max_quantity))


def longest_allocations() -> str:
    """A reservation's allocations as stored: MAX_LINES lines of 64-character goods ids, each
    split over 100 64-character locations (10,000 parts, 1.7 MB). The settings bound a line's
    parts only by its units: MAX_LINES lines of MAX_QUANTITY parts would be 170 MB, past
    MariaDB's max_allowed_packet (16 MiB) whatever the column."""
    lines = [
        {"goodsId": f"g{line:03d}".ljust(IDENTIFIER, "G"), "location": longest_location(i)}
        for line in range(LIMITS.max_lines)
        for i in range(100)
    ]
    return json.dumps([{**line, "num": LIMITS.max_quantity} for line in lines])


# Text built from many identifiers: a line's parts over its locations, a reservation's
# allocations. Every other text column holds one identifier, reference or key (exact), a reason
# or a word.
JOINED = {
    ("stock_outbox", "location"),
    ("backorder_fill", "location"),
    ("reservations", "allocations"),
    ("webhook_subscription", "goods_ids"),
}


def kind(table: sa.Table, column: sa.Column[Any]) -> str:
    """exact (an identifier, reference or key), reason, word, bounded, or joined."""
    if (table.name, column.name) in JOINED:
        return "joined"
    if (table.name, column.name) in BOUNDED:
        return "bounded"
    if column.name == "reason" and table.name in REASONS_CUT:
        return "reason"
    if (table.name, column.name) in WORDS:
        return "word"
    return "exact"


def text_columns() -> list[tuple[sa.Table, sa.Column[Any]]]:
    return [(t, c) for t in TABLES for c in t.columns if isinstance(c.type, sa.String | Exact)]


def exact_value(length: int, world: str, stem: str) -> str:
    """A key of `length` characters in `world`: each world's differs from the first's only in
    case, an accent or a trailing space where the edge lets a value differ so (references: any
    unicode; Idempotency-Keys: printable ASCII), otherwise in its last character."""
    if length == REFERENCE:
        first = f"PO-{stem} Café Ä ".ljust(length - 1, "😀") + " "  # 4-byte UTF-8
    elif length == KEY:
        first = f"Key-{stem} ".ljust(length - 1, "k") + " "
    else:
        first = f"Ab-{stem}-".ljust(length, "Q")
    free = length in (REFERENCE, KEY)
    if world == "first":
        return first
    if world == "case":
        return first.swapcase()
    if world == "accent":
        return first.replace("é", "e") if length == REFERENCE else first[:-2] + "1" + first[-1]
    return first[:-1] if free else first[:-1] + "2"


def row(table: sa.Table, world: str, stem: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for column in table.columns:
        kind_of = isinstance(column.type, sa.String | Exact) and kind(table, column)
        if column.primary_key and isinstance(column.type, sa.Integer):
            if column.autoincrement is not False:
                continue  # numbered by the database
            values[column.name] = LIMITS.max_stock_level  # a number the code gives (an id)
            continue
        if kind_of == "exact":
            length = column.type.length
            assert length is not None
            values[column.name] = exact_value(length, world, stem)
        elif kind_of == "reason":
            values[column.name] = f"transfer t{stem} (Café ☃😀 ".ljust(CUT, "é")
        elif kind_of == "word":
            values[column.name] = max(WORDS[(table.name, column.name)], key=len)
        elif kind_of == "bounded":
            values[column.name] = "😀".ljust(BOUNDED[(table.name, column.name)], "é")
        elif kind_of == "joined":
            big = world == "first"
            if table.name == "reservations":
                values[column.name] = longest_allocations() if big else "[]"
            else:
                values[column.name] = longest_parts() if big else "north:1"
        elif isinstance(column.type, sa.Boolean):
            values[column.name] = False
        elif isinstance(column.type, sa.DateTime):
            values[column.name] = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
        elif isinstance(column.type, sa.Integer):
            values[column.name] = LIMITS.max_stock_level
        else:
            values[column.name] = 1.5
    return values


def test_every_text_column_is_known_and_declared_long_enough() -> None:
    assert (IDENTIFIER, REFERENCE, KEY) == (64, 200, 128)
    for table, column in text_columns():
        declared, name = column.type.length, f"{table.name}.{column.name}"
        found = kind(table, column)
        if found == "word":
            longest = max(len(w) for w in WORDS[(table.name, column.name)])
            assert declared is not None and longest <= declared, name
        elif found == "reason":
            assert declared == CUT, name
        elif found == "bounded":
            assert declared is not None and BOUNDED[(table.name, column.name)] <= declared, name
        elif found == "joined":
            assert isinstance(column.type, sa.Text), name  # LONGTEXT on MySQL and MariaDB
        else:
            assert isinstance(column.type, Exact) or (table.name, column.name) in LOCKS, name
            assert declared in (NEW_ID, IDENTIFIER, REFERENCE, KEY, 80), name


def exact_columns(table: sa.Table) -> list[sa.Column[Any]]:
    return [c for t, c in text_columns() if t is table and kind(t, c) == "exact"]


def test_the_longest_values_fit_and_every_key_compares_exactly(database_url: str) -> None:
    stem = unique("s")[2:]
    keyed = [t for t in TABLES if exact_columns(t)]
    written = {(t.name, w): row(t, w, stem) for t in keyed for w in WORLDS}
    engine = sa.create_engine(database_url)
    try:
        for world in WORLDS:  # one world after another: none may take another's keys
            with engine.begin() as conn:
                for table in keyed:
                    conn.execute(table.insert(), [written[(table.name, world)]])
        with engine.connect() as conn:
            for table, world in written:
                mine = written[(table, world)]
                table_of = next(t for t in keyed if t.name == table)
                for column in exact_columns(table_of):
                    query = sa.select(table_of).where(column == mine[column.name])
                    found = [dict(r) for r in conn.execute(query).mappings()]
                    where = f"{table}.{column.name} looked up in the {world} world"
                    assert len(found) == 1, f"{where}: {len(found)} rows"
                    for name, value in mine.items():  # read back whole: nothing cut or padded
                        assert found[0][name] == value, f"{where}: {name} read back"
    finally:
        engine.dispose()
