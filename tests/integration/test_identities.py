"""Each cluster identity can do what its program's code does, and nothing more (the reconcilers
once lost their Redis user and a grant, and left 394 orders PENDING with nothing to say so).

Real servers set up as `cluster up` sets them up: a Redis with exactly the ACL users of
redis_ha.PERMISSIONS (and a replica, for the relay's WAIT), PostgreSQL roles and databases as
pg_roles.py makes them (the owners' databases migrated by Alembic, the GRANT statements of
RECONCILER_GRANTS and RELAY_GRANTS), ZooKeeper paths with the ACLs of zk_acl.LAYOUT. Each program
then runs its own code as its own identity (tests/identity_runs.py), what it sends is recorded
(tests/identity_capture.py) and held against what it is granted (tests/identity_rights.py).
Patroni's identity and paths are Patroni's code, not checked here; nor are the sentinel,
replica and monitor users, which no program of ours logs in as.
"""

from __future__ import annotations

import inspect
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import redis
import sqlalchemy as sa
from kazoo.client import KazooClient
from kazoo.security import OPEN_ACL_UNSAFE

import migrations
from inventory.cluster import deploy, pg_roles, redis_ha, zk_acl
from inventory.cluster.pg_ha import OWNED, SERVICE_ROLES
from inventory.cluster.secrets import Secrets
from inventory.local.servers import (
    ServerProcess,
    free_port,
    redis_argv,
    redis_ready,
    start_server,
    wait_until,
)
from shared.config.settings import Settings
from shared.database.engines import make_engine
from tests import identity_runs as runs
from tests.conftest import PG_ADMIN_URL
from tests.identity_capture import RedisCalls, SqlCalls, ZkCalls, addresses
from tests.identity_rights import pg_findings, pg_granted, redis_findings, zk_findings

USERS = ("order", "reconciler", "stock", "relay", "events")  # the programs' Redis logins
ZK_IDENTITIES = ("stock", "reconciler", "relay")
HISTORY = {"orders": "order", "stock": "stock"}  # each owned database's Alembic history


@dataclass
class Stores:
    secrets: Secrets
    admin: redis.Redis  # the harness's own login (`default`), never a program's
    ignored: set[str]  # its connections and the replica's, which no identity made
    redis_port: int
    prefix: str  # of the throwaway PostgreSQL roles and databases

    def pg_name(self, name: str) -> str:
        return f"{self.prefix}_{name}"

    def pg_url(self, role: str, database: str) -> str:
        host = sa.make_url(PG_ADMIN_URL).set(username=self.pg_name(role), password=None)
        return host.set(database=self.pg_name(database)).render_as_string(hide_password=False)

    def owner(self, database: str) -> sa.Engine:
        return sa.create_engine(self.pg_url(database, database))

    def settings(self, role: str, zk_hosts: str = "127.0.0.1:1", **extra: str) -> Settings:
        return runs.program_settings(
            role, self.secrets, self.redis_port, zk_hosts, self.pg_url, **extra
        )

    def set_users(self, permissions: dict[str, str]) -> None:
        for user in USERS:
            rules = permissions[user].split()
            password = f">{self.secrets.redis[user]}"
            self.admin.execute_command("ACL", "SETUSER", user, "reset", "on", password, *rules)

    def grant(self, database: str, statements: tuple[str, ...], verb: str = "GRANT") -> None:
        admin = sa.create_engine(
            sa.make_url(PG_ADMIN_URL).set(database=self.pg_name(database)),
            isolation_level="AUTOCOMMIT",
        )
        with admin.connect() as conn:
            for statement in statements:
                named = re.sub(r"TO (\w+)$", lambda m: f"TO {self.pg_name(m[1])}", statement)
                if verb == "REVOKE":
                    named = re.sub(r"^GRANT (.*) TO", r"REVOKE \1 FROM", named)
                conn.execute(sa.text(named))
        admin.dispose()


def connect_grants() -> set[tuple[str, str]]:
    """(database, role) of the CONNECT grants pg_roles.py makes for the roles that own none."""
    source = inspect.getsource(pg_roles.create_roles_and_databases)
    return set(re.findall(r"GRANT CONNECT ON DATABASE (\w+) TO (\w+)", source))


def _redis(folder: Path, port: int, *extra: str) -> ServerProcess:
    argv = [*redis_argv(folder, port), *extra]
    return start_server("redis", argv, port, folder, lambda: redis_ready(port), 20)


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stores]:
    port, replica_port = free_port(), free_port()
    # diskless: the replica is in sync (WAIT counts it) at once, not after a snapshot on disk
    diskless = ("--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0")
    primary = _redis(tmp_path_factory.mktemp("acl-redis"), port, *diskless)
    replica = _redis(
        tmp_path_factory.mktemp("acl-replica"), replica_port, "--replicaof", "127.0.0.1", str(port)
    )
    admin = redis.Redis(port=port, decode_responses=True)
    wait_until(lambda: admin.wait(1, 100) == 1, 20, "the replica in sync")
    prefix = f"idchk_{uuid.uuid4().hex[:8]}"
    stores = Stores(Secrets(), admin, set(), port, prefix)
    stores.ignored = addresses(admin) | addresses(admin, "replica")
    stores.set_users(redis_ha.PERMISSIONS)
    pg = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        with pg.connect() as conn:
            for role in SERVICE_ROLES:
                conn.execute(sa.text(f"CREATE ROLE {stores.pg_name(role)} LOGIN"))
            for database in OWNED:
                name = stores.pg_name(database)
                conn.execute(sa.text(f"CREATE DATABASE {name} OWNER {name}"))
                conn.execute(sa.text(f"REVOKE ALL ON DATABASE {name} FROM PUBLIC"))
            for database, role in connect_grants():
                conn.execute(
                    sa.text(
                        f"GRANT CONNECT ON DATABASE {stores.pg_name(database)} "
                        f"TO {stores.pg_name(role)}"
                    )
                )
        for database, history in HISTORY.items():
            migrations.upgrade(stores.pg_url(database, database), history)
        stores.grant("orders", pg_roles.RECONCILER_GRANTS)
        stores.grant("stock", pg_roles.RELAY_GRANTS)
        yield stores
    finally:
        with pg.connect() as conn:
            for database in OWNED:
                name = stores.pg_name(database)
                conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            for role in SERVICE_ROLES:
                conn.execute(sa.text(f"DROP ROLE IF EXISTS {stores.pg_name(role)}"))
        pg.dispose()
        admin.close()
        replica.stop()
        primary.stop()


def test_each_redis_and_postgres_identity_has_exactly_what_its_code_calls(stores: Stores) -> None:
    goods = f"idchk-{uuid.uuid4().hex[:8]}"
    calls = RedisCalls(stores.admin, stores.ignored)
    calls.mark("order")
    runs.order_service(stores.settings("order"))
    calls.mark("reconciler")
    reconciler_sql = runs.reconciler_pass(
        stores.settings("reconciler"), stores.owner("orders"), SqlCalls
    )
    calls.mark("stock")
    runs.stock_service(stores.settings("stock", LOCK_BACKEND="redis"))
    calls.mark("events")
    consumer = runs.events_consumer(
        runs.direct_redis(stores.secrets.redis_url("events"), stores.redis_port), goods
    )
    calls.mark("relay")
    relay_settings = stores.settings("relay")
    relay_engine = make_engine(relay_settings.stock_database_url)
    relay_sql = SqlCalls(relay_engine)
    with relay_sql.refusals():
        published = runs.relay_round(relay_settings, stores.owner("stock"), relay_engine, goods)
    calls.mark("events")
    runs.events_read(consumer, published)
    calls.collect()

    # what each is known to call: a capture that saw nothing would pass everything
    assert {"set", "del", "ping"} <= calls.calls["order"]
    assert {"xadd", "wait"} <= calls.calls["relay"]
    assert not consumer.wait_for(published, 0), "the events user read nothing of the relay's"
    grants = {**pg_granted(pg_roles.RECONCILER_GRANTS), **pg_granted(pg_roles.RELAY_GRANTS)}
    assert ("DELETE", "hold_release", None) in reconciler_sql.rights()
    findings = redis_findings(redis_ha.PERMISSIONS, USERS, calls.calls, calls.refused)
    for role, sql in (("reconciler", reconciler_sql), ("relay", relay_sql)):
        findings += pg_findings(role, grants[role], sql.rights(), sql.denied)
    assert findings == [], "\n".join(findings)


def test_each_program_logs_in_to_the_database_its_role_may(stores: Stores) -> None:
    """The owners' databases and the others' CONNECT grants, against the logins each program
    is given (Secrets.env_for): every pair used is granted, every pair granted is used."""
    logins = set()
    for role in deploy.ROLES:
        for key, url in stores.secrets.env_for(role).items():
            if key.endswith("_DATABASE_URL"):
                parts = urlsplit(url)
                logins.add((parts.username, parts.path.strip("/")))
    assert logins == set(SERVICE_ROLES.items())
    assert {(d, r) for r, d in logins if r != d} == {(d, r) for d, r in connect_grants()}
    assert ("reconciler", "orders") in logins and ("relay", "stock") in logins


@pytest.mark.parametrize(
    ("user", "rule", "expected"),
    [
        ("order", ("+del", ""), "redis order: del refused (called, no right)"),
        ("reconciler", ("+set", "+set +get"), "redis reconciler: +get granted, never called"),
    ],
)
def test_a_redis_rule_changed_by_hand_is_reported(
    stores: Stores, user: str, rule: tuple[str, str], expected: str
) -> None:
    changed = {**redis_ha.PERMISSIONS, user: redis_ha.PERMISSIONS[user].replace(*rule)}
    stores.set_users(changed)
    try:
        calls = RedisCalls(stores.admin, stores.ignored)
        calls.mark(user)
        if user == "order":
            runs.order_service(stores.settings("order"))
        else:
            runs.reconciler_pass(stores.settings(user), stores.owner("orders"), SqlCalls)
        calls.collect()
    finally:
        stores.set_users(redis_ha.PERMISSIONS)
    assert redis_findings(changed, [user], calls.calls, calls.refused) == [expected]


def test_a_grant_removed_by_hand_is_reported(stores: Stores) -> None:
    """RECONCILER_GRANTS without hold_release: PostgreSQL refuses the pass's read of it."""
    kept = tuple(g for g in pg_roles.RECONCILER_GRANTS if "hold_release" not in g)
    removed = tuple(g for g in pg_roles.RECONCILER_GRANTS if "hold_release" in g)
    stores.grant("orders", removed, "REVOKE")
    try:
        sql = runs.reconciler_pass(stores.settings("reconciler"), stores.owner("orders"), SqlCalls)
    finally:
        stores.grant("orders", removed)
    granted = pg_granted(kept)["reconciler"]
    assert pg_findings("reconciler", granted, sql.rights(), sql.denied) == [
        "postgres reconciler: permission denied for table hold_release (called, no right)",
        "postgres reconciler: SELECT ON hold_release called, no right",
    ]


def lay_out(zk: ServerProcess, layout: dict[str, str | None], secrets: Secrets) -> str:
    """zk_acl.lay_out's paths and ACLs under a chroot of their own, without a superuser: each
    made open, then given its ACL once its children exist."""
    chroot = f"/identities-{uuid.uuid4().hex[:8]}"
    client = KazooClient(hosts=zk.address)
    client.start(timeout=10)
    for path in layout:
        client.ensure_path(chroot + path, acl=OPEN_ACL_UNSAFE)
    for path, owner in sorted(layout.items(), key=lambda item: -len(item[0])):
        client.set_acls(chroot + path, zk_acl.acl_of(owner, secrets))
    client.stop()
    client.close()
    return zk.address + chroot


def zk_run(
    stores: Stores,
    zk: ServerProcess,
    layout: dict[str, str | None],
    monkeypatch: pytest.MonkeyPatch,
) -> list[str]:
    hosts = lay_out(zk, layout, stores.secrets)
    capture = ZkCalls()
    capture.install(monkeypatch)
    runs.zookeeper_calls({role: stores.settings(role, hosts) for role in ZK_IDENTITIES})
    monkeypatch.undo()
    assert capture.calls.get("stock"), "the stock service's lock made no node"
    return zk_findings(layout, ZK_IDENTITIES, capture.calls, capture.refused)


def test_each_zookeeper_identity_works_under_exactly_its_paths(
    stores: Stores, zk_server: ServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert zk_run(stores, zk_server, dict(zk_acl.LAYOUT), monkeypatch) == []


def test_a_zookeeper_path_given_to_another_identity_is_reported(
    stores: Stores, zk_server: ServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    changed = {**zk_acl.LAYOUT, "/inventory/relay": "reconciler"}
    assert set(zk_run(stores, zk_server, changed, monkeypatch)) == {
        "zookeeper relay: create under /inventory/relay: NoAuth (called, no right)",
        "zookeeper relay: create under /inventory/relay called, no right",
        "zookeeper reconciler: /inventory/relay granted, never created under",
    }
