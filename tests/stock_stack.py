"""The stateful test's stack: a stock service app on a database of its own (created on the
backend the `database_url` fixture names, migrated, dropped after), with the suite's real
ZooKeeper and Redis; and the flags of what was answered, shared by the machine's rules."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

import migrations
from coordination.locks import LockBackend
from inventory.local.servers import ServerProcess
from stock_service.storage.store import StockStore
from tests.conftest import (
    MYSQL_ADMIN_URL,
    PG_ADMIN_URL,
    _drop_database,
    _throwaway_database,
    make_settings,
)
from tests.stock_edge import StockEdge, stock_app


@dataclass
class Stack:
    backend: str
    app: Any
    edge: StockEdge
    engine: sa.Engine
    store: StockStore
    locks: LockBackend
    max_level: int
    max_lines: int
    max_quantity: int
    left_out: frozenset[str] = field(default_factory=frozenset)


def own_database(database_url: str, tmp_path: Path) -> Iterator[str]:
    """A database of the test's own on the same backend: the machine changes the default
    location, which every other test of the session shares."""
    backend = sa.make_url(database_url).get_backend_name()
    if backend == "sqlite":
        url, admin = f"sqlite:///{tmp_path / 'stateful.db'}", None
    else:
        admin = PG_ADMIN_URL if backend == "postgresql" else MYSQL_ADMIN_URL
        name = f"inv_stateful_{uuid.uuid4().hex[:8]}"
        url = _throwaway_database(admin, name)
    migrations.upgrade(url, "stock")
    try:
        yield url
    finally:
        if admin:
            _drop_database(admin, name)


@pytest.fixture
def stack(
    database_url: str, tmp_path: Path, zk_server: ServerProcess, redis_server: ServerProcess
) -> Iterator[Stack]:
    for url in own_database(database_url, tmp_path):
        settings = make_settings(url, zk_server, redis_server)
        with stock_app(settings) as (app, edge):
            deps = app.extensions["stock"]
            left_out = os.environ.get("STOCK_STATEFUL_WITHOUT", "")
            yield Stack(
                sa.make_url(url).get_backend_name(),
                app,
                edge,
                deps.engine,
                deps.store,
                deps.locks,
                settings.max_stock_level,
                settings.max_lines,
                settings.max_quantity,
                frozenset(n for n in left_out.split(",") if n),
            )
