"""A database of a test's own on one backend, for tests that cannot share the session's: one
that must start empty, or a reader of every row (a relay sends every unsent outbox row it
finds, whoever wrote it). Made on the servers conftest uses, the way it makes its own."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import sqlalchemy as sa

import migrations
from tests.conftest import MYSQL_ADMIN_URL, PG_ADMIN_URL, _drop_database, _throwaway_database


def backend_of(database_url: str) -> str:
    """conftest's name of the backend of a URL: sqlite, postgresql or mysql."""
    return sa.make_url(database_url).get_backend_name()


def fresh_database(backend: str, folder: Path, *histories: str) -> Iterator[str]:
    """The URL of a new database on `backend`, migrated to head with each of `histories`
    ("order", "stock"; none: empty), dropped when the generator is closed."""
    if backend == "sqlite":
        url, admin = f"sqlite:///{folder / f'own-{uuid.uuid4().hex[:8]}.db'}", None
    else:
        admin = PG_ADMIN_URL if backend == "postgresql" else MYSQL_ADMIN_URL
        name = f"inv_own_{uuid.uuid4().hex[:8]}"
        url = _throwaway_database(admin, name)
    try:
        for history in histories:
            migrations.upgrade(url, history)
        yield url
    finally:
        if admin:
            _drop_database(admin, name)
