"""The long-running programs never die of one error: the relay of stock events and the elected
reconciler log, wait and go on after any exception, in a round or pass and in the election.

Each error is a real one, made by a real database here and then raised again inside the loop
(an injected failing step): a read-only transaction (a PostgreSQL primary just demoted, its
connections still open), a statement timeout (PostgreSQL's statement_timeout), MySQL's 1205
lock wait timeout, and a ZooKeeper connection loss in the election. Before, the relay exited
on any but a Redis error or DatabaseUnavailable, and nothing restarted it; the reconciler
exited on an error of its election. Real ZooKeeper, Redis, SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from kazoo.exceptions import ConnectionLoss

import migrations
from inventory.local.servers import ServerProcess, wait_until
from order_service.settling import reconciler
from shared.config.settings import Settings
from stock_service.ledger import relay
from tests.conftest import (
    MYSQL_ADMIN_URL,
    PG_ADMIN_URL,
    _drop_database,
    _throwaway_database,
    make_settings,
    unique,
)
from tests.integration.test_relay import once_in_order, stream, write_events


def _caught(engine: sa.Engine, *statements: str) -> sa.exc.DBAPIError:
    try:
        with engine.begin() as conn:
            for statement in statements:
                conn.execute(sa.text(statement))
    except sa.exc.DBAPIError as exc:
        return exc
    raise AssertionError(f"no error from {statements}")


@pytest.fixture(scope="module")
def real_errors() -> Iterator[list[sa.exc.DBAPIError]]:
    """The errors as SQLAlchemy raises them from the real drivers (psycopg, pymysql)."""
    pg = sa.create_engine(PG_ADMIN_URL)
    read_only = _caught(
        pg,
        "SET TRANSACTION READ ONLY",
        "CREATE TABLE never_made (id int)",
    )
    timeout = _caught(pg, "SET LOCAL statement_timeout = 1", "SELECT pg_sleep(1)")
    pg.dispose()
    name = f"inv_lw_{uuid.uuid4().hex[:8]}"
    url = _throwaway_database(MYSQL_ADMIN_URL, name)
    my = sa.create_engine(url)
    try:
        with my.begin() as conn:
            conn.execute(sa.text("CREATE TABLE held (id int primary key)"))
            conn.execute(sa.text("INSERT INTO held VALUES (1)"))
        with my.connect() as holder, holder.begin():
            holder.execute(sa.text("SELECT id FROM held WHERE id = 1 FOR UPDATE"))
            lock_wait = _caught(
                my,
                "SET SESSION innodb_lock_wait_timeout = 1",
                "SELECT id FROM held WHERE id = 1 FOR UPDATE",
            )
    finally:
        my.dispose()
        _drop_database(MYSQL_ADMIN_URL, name)
    assert "read-only transaction" in str(read_only.orig)
    assert type(read_only.orig).__name__ == "ReadOnlySqlTransaction"
    assert type(timeout.orig).__name__ == "QueryCanceled"
    assert lock_wait.orig.args[0] == 1205  # type: ignore[union-attr]
    yield [read_only, timeout, lock_wait]


def failing_first(real: Callable[..., Any], errors: list[BaseException]) -> Callable[..., Any]:
    """`real`, its first calls raising `errors` one each."""
    left = list(errors)

    def step(*args: Any, **kwargs: Any) -> Any:
        if left:
            raise left.pop(0)
        return real(*args, **kwargs)

    return step


class FlakyElector:
    """A real elector whose first campaign fails as ZooKeeper's connection loss does."""

    def __init__(self, real: Any) -> None:
        self.real, self.failed = real, False

    def campaign(self, stop: threading.Event) -> int | None:
        if not self.failed:
            self.failed = True
            raise ConnectionLoss("injected: the connection was lost mid-campaign")
        return self.real.campaign(stop)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def flaky_elections(module: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    make = module.make_elector
    monkeypatch.setattr(module, "make_elector", lambda *a: FlakyElector(make(*a)))


def test_the_relay_goes_on_after_any_error_and_publishes_what_came_after(
    tmp_path: Path,
    zk_server: ServerProcess,
    redis_server: ServerProcess,
    real_errors: list[sa.exc.DBAPIError],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="relay")
    # SQLite alone: it proves the loop outlives errors (the servers' own, injected), not its SQL
    url = f"sqlite:///{tmp_path / 'stock.db'}"
    migrations.upgrade(url, "stock")
    settings = Settings(
        stock_database_url=url,
        zk_hosts=zk_server.address,
        redis_url=f"redis://{redis_server.address}/0",
        zk_session_timeout=3.0,
        stock_events_stream=f"test:loops:{uuid.uuid4().hex[:8]}",
    )
    monkeypatch.setattr(relay, "BACKOFF", 0.05)
    monkeypatch.setattr(relay, "MAX_BACKOFF", 0.2, raising=False)
    errors: list[BaseException] = [*real_errors, RuntimeError("a bug")]
    monkeypatch.setattr(relay, "publish_pending", failing_first(relay.publish_pending, errors))
    flaky_elections(relay, monkeypatch)
    goods = unique()
    write_events(url, goods, 1, 5)
    stop = threading.Event()
    thread = threading.Thread(target=relay.serve, args=(settings, "survivor", stop), daemon=True)
    thread.start()
    try:
        wait_until(lambda: once_in_order(stream(settings), goods) == [1, 2, 3, 4, 5], 30, "5")
        write_events(url, goods, 6, 5)  # later work: events committed after the failures
        wait_until(lambda: len(once_in_order(stream(settings), goods)) == 10, 30, "10 events")
        assert thread.is_alive()
    finally:
        stop.set()
        thread.join(15)
    said = "\n".join(r.getMessage() for r in caplog.records)
    assert "campaign failed" in said and "ConnectionLoss" in said
    for name in ("ReadOnlySqlTransaction", "QueryCanceled", "1205", "RuntimeError"):
        assert name in said, f"{name} not logged"
    assert once_in_order(stream(settings), goods) == list(range(1, 11))


def test_the_reconciler_goes_on_after_any_error_and_passes_again(
    tmp_path: Path,
    zk_server: ServerProcess,
    redis_server: ServerProcess,
    real_errors: list[sa.exc.DBAPIError],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="reconciler")
    # SQLite alone: it proves the loop outlives errors (the servers' own, injected), not its SQL
    url = f"sqlite:///{tmp_path / 'order.db'}"
    migrations.upgrade(url, "order")
    settings = make_settings(
        url,
        zk_server,
        redis_server,
        reconcile_interval=0.05,
        reconcile_older_than=0,
        reconcile_age_unchecked_for_tests=True,
        log_level="INFO",
    )
    monkeypatch.setattr(reconciler, "MAX_BACKOFF", 0.2, raising=False)
    errors: list[BaseException] = [*real_errors, RuntimeError("a bug")]
    passes = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        passes.append(1)
        return real_reconcile(*args, **kwargs)

    real_reconcile = reconciler.reconcile
    monkeypatch.setattr(reconciler, "reconcile", failing_first(counted, errors))
    flaky_elections(reconciler, monkeypatch)
    stop = threading.Event()
    name = unique("rec")
    thread = threading.Thread(target=reconciler.serve, args=(settings, name, stop), daemon=True)
    thread.start()
    try:
        wait_until(lambda: len(passes) >= 3, 30, "three real passes after the failures")
        assert thread.is_alive()
    finally:
        stop.set()
        thread.join(15)
    said = "\n".join(r.getMessage() for r in caplog.records)
    assert "campaign failed" in said and "ConnectionLoss" in said
    for error in ("ReadOnlySqlTransaction", "QueryCanceled", "1205", "RuntimeError"):
        assert error in said, f"{error} not logged"
    assert f"{name} pass token=" in said
