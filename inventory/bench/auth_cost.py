"""`inventory bench --auth`: what the cluster's authentication and TLS cost, each part with and
without, side by side in one run, on servers of the bench's own (ZooKeepers, Redises, and, as
root, a PostgreSQL made with initdb; the machine's own servers are not touched).

Authentication happens when a connection or session opens (ZooKeeper digest, Redis AUTH,
PostgreSQL scram-sha-256), plus an ACL check on each ZooKeeper write and each Redis command,
and a token comparison on each stock-service request. The services keep their connections
(pools, one ZooKeeper session per process), so an order pays the per-request checks only;
the per-connection price is paid again after a fault, when every connection is remade. Both
are measured: a fresh connection's rate, and a pooled operation's rate. TLS likewise, for
ZooKeeper (auth_zk_tls.py), Redis (auth_redis_tls.py: also redis-py's SSL context per
connection against shared/redis_tls.py's one per process) and PostgreSQL (auth_postgres.py);
and what a fault costs the pools, timed: a Sentinel failover (auth_failover.py).
"""

from __future__ import annotations

import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import redis
from kazoo.client import KazooClient
from kazoo.security import make_digest_acl

from inventory.bench.auth_failover import THREADS, failovers
from inventory.bench.auth_pair import PASSWORD, Pair, measure_pair
from inventory.bench.auth_postgres import own_postgres, postgres_pairs
from inventory.bench.auth_redis_tls import redis_tls_pairs
from inventory.bench.auth_show import cpu_table, failover_table
from inventory.bench.auth_zk_tls import zookeeper_tls_pairs
from inventory.bench.limits import quiet_kazoo
from inventory.local.servers import ServerProcess, start_redis, start_zookeeper

# --- ZooKeeper ------------------------------------------------------------------------------------


def zookeeper_pairs(zk: ServerProcess, seconds: float) -> list[Pair]:
    quiet_kazoo()
    hosts = zk.address
    identity = f"stock:{PASSWORD}"

    def session(auth: bool) -> Callable[[], None]:
        def run() -> None:
            client = KazooClient(hosts=hosts, auth_data=[("digest", identity)] if auth else None)
            client.start(timeout=10)
            client.stop()
            client.close()

        return run

    plain = KazooClient(hosts=hosts)
    authed = KazooClient(
        hosts=hosts,
        auth_data=[("digest", identity)],
        default_acl=[make_digest_acl("stock", PASSWORD, all=True)],
    )
    for client in (plain, authed):
        client.start(timeout=10)
    root = f"/bench-auth-{uuid.uuid4().hex[:6]}"
    plain.ensure_path(f"{root}/open")
    authed.ensure_path(f"{root}/acl")

    def cycle(client: KazooClient, parent: str) -> Callable[[], None]:
        return lambda: client.delete(client.create(f"{parent}/n-", ephemeral=True, sequence=True))

    try:
        return [
            measure_pair(
                "ZooKeeper", "session opened and closed", session(False), session(True), seconds
            ),
            measure_pair(
                "ZooKeeper",
                "lock node created and deleted (ACL checked on each)",
                cycle(plain, f"{root}/open"),
                cycle(authed, f"{root}/acl"),
                seconds,
            ),
        ]
    finally:
        for client in (plain, authed):
            client.stop()
            client.close()


# --- Redis ----------------------------------------------------------------------------------------


def redis_pairs(server: ServerProcess, seconds: float) -> list[Pair]:
    port = server.port
    admin = redis.Redis(port=port)
    admin.execute_command(
        "ACL", "SETUSER", "stock", "on", f">{PASSWORD}", "~[0-9]*", "+set", "+del", "+ping"
    )
    admin.close()

    def fresh(auth: bool) -> Callable[[], None]:
        def run() -> None:
            client = redis.Redis(
                port=port,
                username="stock" if auth else None,
                password=PASSWORD if auth else None,
                protocol=2,
            )
            client.ping()
            client.close()

        return run

    plain = redis.Redis(port=port, protocol=2)
    authed = redis.Redis(port=port, username="stock", password=PASSWORD, protocol=2)

    def flag(client: redis.Redis) -> Callable[[], object]:
        return lambda: (client.set("1795560000000ab", "orderId"), client.delete("1795560000000ab"))

    try:
        return [
            measure_pair(
                "Redis", "connection opened, PING, closed", fresh(False), fresh(True), seconds
            ),
            measure_pair(
                "Redis",
                "flag SET + DEL on a kept connection (ACL checked)",
                flag(plain),
                flag(authed),
                seconds,
            ),
        ]
    finally:
        plain.close()
        authed.close()


# --- the stock service's token --------------------------------------------------------------------


def tokenmeasure_pair(seconds: float) -> Pair:
    """GET /stockFlow/{flag} on the stock service in-process (SQLite, no lock): the same
    request without STOCK_SERVICE_TOKEN set and with it (and the token sent)."""
    import stock_service
    from shared.config.settings import Settings

    folder = Path(tempfile.mkdtemp(prefix="bench-auth-"))
    try:
        apps = {}
        for name, token in (("open", ""), ("auth", "bench-token")):
            settings = Settings(
                stock_database_url=f"sqlite:///{folder / name}.db",
                lock_backend="none",
                stock_service_token=token,
                migrate_on_start=True,
            )
            apps[name] = stock_service.create_app(settings).test_client()
        headers = {"Authorization": "Bearer bench-token"}
        return measure_pair(
            "stock service",
            "GET /stockFlow/{flag} in-process (token compared on each request)",
            lambda: apps["open"].get("/stockFlow/f1"),
            lambda: apps["auth"].get("/stockFlow/f1", headers=headers),
            seconds,
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run(seconds: float = 6.0, say: Callable[..., object] = print) -> list[Pair]:
    """Every pair, each part on servers of its own started in turn (two JVMs or a ZooKeeper
    and a failover at once would be noise on 2 cores); the client's CPU per operation and the
    failover timed are shown here (`say` is the console's print), the pairs by the caller."""
    pairs: list[Pair] = []
    with tempfile.TemporaryDirectory(prefix="bench-auth-") as tmp:
        folder = Path(tmp)
        folder.chmod(0o755)  # the postgres user reaches its data folder through it
        zk = start_zookeeper(folder / "zk", fsync=False)
        try:
            time.sleep(3)  # ZooKeeper's JVM compiles its hot paths in its first seconds
            say("ZooKeeper ...")
            pairs += zookeeper_pairs(zk, seconds)
        finally:
            zk.stop()
        say("ZooKeeper TLS ...")
        pairs += zookeeper_tls_pairs(folder / "zk-tls", seconds)
        server = start_redis(folder / "redis")
        try:
            say("Redis ...")
            pairs += redis_pairs(server, seconds)
        finally:
            server.stop()
        pairs += redis_tls_pairs(folder, seconds)
        say(f"Redis: a Sentinel failover with {THREADS} threads, twice ...")
        switched = failovers(folder / "failover")
        with own_postgres(folder / "pgdir") as server_pg:
            if server_pg is None:
                say("PostgreSQL: skipped (initdb needs root, to run as the postgres user)")
            else:
                say("PostgreSQL ...")
                pairs += postgres_pairs(*server_pg, seconds)
    say("the stock service's token ...")
    pairs.append(tokenmeasure_pair(seconds))
    say(cpu_table(pairs))
    say(failover_table(switched))
    return pairs
