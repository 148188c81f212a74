"""Real servers for the tests: a ZooKeeper and a Redis started here on free loopback ports,
and one throwaway database per SQL backend (SQLite, PostgreSQL, MariaDB/MySQL), migrated once
with Alembic. A server that cannot be reached fails the tests loudly; nothing is skipped.

Tests never clean up: each uses its own goods ids and flags (`unique`), as cosmicpython does.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

import migrations
from inventory.local.servers import ServerProcess, start_redis, start_zookeeper
from shared.config.settings import Settings

PG_ADMIN_URL = os.environ.get(
    "TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
MYSQL_ADMIN_URL = os.environ.get("TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/test")
BACKENDS = ("sqlite", "postgresql", "mysql")
ADMIN_TOKEN = "test-admin-token"  # the services' ADMIN_TOKEN in the in-process tests
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def unique(prefix: str = "g") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def dump_log(server: ServerProcess) -> None:
    if server.log.exists():
        print(f"--- {server.name} log (last lines) ---")
        print("\n".join(server.log.read_text(errors="replace").splitlines()[-30:]))


@pytest.fixture(scope="session")
def zk_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    # fsync off: the tests measure behaviour, not durability, and the disk is shared.
    server = start_zookeeper(tmp_path_factory.mktemp("zookeeper"), fsync=False)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = start_redis(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redlock_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[ServerProcess]]:
    """Three independent Redis servers, as RedLock wants them."""
    started = [start_redis(tmp_path_factory.mktemp(f"redlock{i}")) for i in range(3)]
    yield started
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def etcd_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    from inventory.local.etcd_server import start_etcd

    server = start_etcd(tmp_path_factory.mktemp("etcd"))
    yield server
    server.stop()


def _throwaway_database(admin_url: str, name: str) -> str:
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f"CREATE DATABASE {name}"))
    except sa.exc.OperationalError as exc:
        pytest.fail(f"database server at {admin.url.render_as_string()} unreachable: {exc.orig}")
    finally:
        admin.dispose()
    return admin.url.set(database=name).render_as_string(hide_password=False)


def _drop_database(admin_url: str, name: str) -> None:
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        if admin.url.get_backend_name() == "postgresql":
            conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        else:
            conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name}"))
    admin.dispose()


@pytest.fixture(scope="session", params=BACKENDS)
def database_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """One database per backend for the whole run, holding both services' schemas (each
    history has its own version table)."""
    backend = request.param
    name = f"inv_test_{uuid.uuid4().hex[:8]}"
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('sqlite') / 'inventory.db'}"
        admin = None
    else:
        admin = PG_ADMIN_URL if backend == "postgresql" else MYSQL_ADMIN_URL
        url = _throwaway_database(admin, name)
    migrations.upgrade(url, "order")
    migrations.upgrade(url, "stock")
    yield url
    if admin:
        _drop_database(admin, name)


def make_settings(
    database_url: str, zk: ServerProcess, redis: ServerProcess, **overrides: object
) -> Settings:
    values: dict[str, object] = {
        "order_database_url": database_url,
        "stock_database_url": database_url,
        "zk_hosts": zk.address,
        "redis_url": f"redis://{redis.address}/0",
        "confirm_backoff": (0.05, 0.1, 0.2),
        "stock_call_timeout": 10.0,
        "retry_backoff": 0.01,
        "lock_timeout": 20.0,
        "zk_session_timeout": 4.0,
        "log_level": "WARNING",
        "admin_token": ADMIN_TOKEN,
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture
def settings(database_url: str, zk_server: ServerProcess, redis_server: ServerProcess) -> Settings:
    return make_settings(database_url, zk_server, redis_server)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--databases",
        default=",".join(BACKENDS),
        help="the SQL backends the tests parametrised over `database_url` run on, comma-"
        "separated (default: all of them); `make test-quick` runs SQLite only",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With --databases, the tests of the other backends are deselected (said in the summary,
    as `N deselected`), and their database servers are never asked for."""
    chosen = [b for b in config.getoption("--databases").split(",") if b]
    unknown = set(chosen) - set(BACKENDS)
    if unknown or not chosen:
        raise pytest.UsageError(f"--databases: choose among {', '.join(BACKENDS)}")
    keep, drop = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        on = params.get("database_url")
        (drop if on is not None and on not in chosen else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> None:
    """When a test fails, show the last lines of the servers' logs (as kazoo's tests do)."""
    if call.when == "call" and call.excinfo is not None:
        for name in ("zk_server", "redis_server", "etcd_server"):
            server = getattr(item, "funcargs", {}).get(name)
            if isinstance(server, ServerProcess):
                dump_log(server)


@pytest.fixture
def tmp_home(tmp_path: Path) -> Path:
    return tmp_path
