"""The programs the cluster runs, each inside its host: how each is started, found ready, and
restarted after the nemesis killed it.

A `Proc` keeps its argv and environment in the cluster's state file, so a restart (by the
nemesis, or by `cluster up` on a half-dead cluster) starts exactly what `up` started.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from inventory import servers
from inventory.cluster import netns, topology
from inventory.cluster.topology import Host
from inventory.ensemble import zk_mode
from inventory.gunicorn import gunicorn_argv
from inventory.servers import wait_until

PG_BIN = Path("/usr/lib/postgresql/15/bin")


@dataclass
class Proc:
    name: str
    host: str
    argv: list[str]
    log: str
    env: dict[str, str] = field(default_factory=dict)
    pid: int = 0

    @property
    def namespace(self) -> str:
        return topology.host(self.host).namespace

    def start(self, home: Path) -> None:
        self.pid = servers.spawn(
            netns.in_host(self.namespace, self.argv),
            Path(self.log),
            home,
            {**os.environ, **self.env},
        )

    def alive(self) -> bool:
        return self.pid > 0 and servers.pid_alive(self.pid)

    def signal(self, sig: int) -> None:
        """To the whole process group: gunicorn's master and workers, runuser and postgres."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, sig)

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        wait_until(lambda: not self.alive(), 10, f"{self.name} to die")

    def workers(self) -> list[int]:
        """gunicorn's workers: the children of the master (ip netns exec became the master)."""
        try:
            found = []
            for task in Path(f"/proc/{self.pid}/task").iterdir():
                found += [int(p) for p in (task / "children").read_text().split()]
            return found
        except OSError:
            return []


# --- ZooKeeper ensemble -----------------------------------------------------------------------


def zookeeper(zk: Host, home: Path) -> Proc:
    folder = home / zk.name
    (folder / "data").mkdir(parents=True, exist_ok=True)
    members = topology.by_role("zookeeper")
    (folder / "data" / "myid").write_text(f"{members.index(zk) + 1}\n")
    peers = "".join(
        f"server.{i + 1}={m.address}:{topology.ZK_PEER_PORT}:{topology.ZK_ELECTION_PORT}\n"
        for i, m in enumerate(members)
    )
    (folder / "zoo.cfg").write_text(
        "tickTime=500\ninitLimit=20\nsyncLimit=4\n"
        "minSessionTimeout=1000\nmaxSessionTimeout=60000\n"
        f"dataDir={folder / 'data'}\nclientPort={topology.ZK_PORT}\n"
        "maxClientCnxns=0\nadmin.enableServer=false\n"
        "4lw.commands.whitelist=ruok,srvr,stat,mntr\n" + peers
    )
    argv = servers.zookeeper_argv(folder, folder / "zoo.cfg")
    return Proc(zk.name, zk.name, argv, str(folder / "zookeeper.log"))


def zk_modes() -> dict[str, str | None]:
    return {h.name: zk_mode(topology.ZK_PORT, h.address) for h in topology.by_role("zookeeper")}


def ensemble_ready() -> bool:
    modes = list(zk_modes().values())
    return modes.count("leader") == 1 and modes.count("follower") == len(modes) - 1


def zk_leader() -> str | None:
    return next((name for name, mode in zk_modes().items() if mode == "leader"), None)


# --- Redis and PostgreSQL ---------------------------------------------------------------------


def redis(home: Path) -> Proc:
    folder = home / "redis"
    folder.mkdir(parents=True, exist_ok=True)
    argv = servers.redis_argv(folder, topology.REDIS_PORT, bind="0.0.0.0")
    return Proc("redis", "redis", argv, str(folder / "redis.log"))


def redis_ready() -> bool:
    return servers.redis_ready(topology.REDIS_PORT, topology.host("redis").address)


def postgres(home: Path) -> Proc:
    """A PostgreSQL of the cluster's own: initdb into the cluster's folder (as the postgres
    user: initdb and postgres refuse root), trust for the cluster's subnet only."""
    folder = home / "pg"
    data = folder / "data"
    if not (data / "PG_VERSION").exists():
        if not (PG_BIN / "initdb").exists():
            raise netns.NetworkError("PostgreSQL 15 is not installed: apt-get install postgresql")
        folder.mkdir(parents=True, exist_ok=True)
        shutil.chown(folder, "postgres", "postgres")
        subprocess.run(
            [
                "runuser",
                "-u",
                "postgres",
                "--",
                str(PG_BIN / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
            ],
            check=True,
            capture_output=True,
        )
        with open(data / "pg_hba.conf", "a") as hba:
            hba.write(f"host all all {netns.SUBNET}.0/24 trust\n")
    argv = [
        "runuser",
        "-u",
        "postgres",
        "--",
        str(PG_BIN / "postgres"),
        "-D",
        str(data),
        "-c",
        f"listen_addresses={topology.host('pg').address}",
        "-c",
        f"port={topology.PG_PORT}",
        "-c",
        f"unix_socket_directories={folder}",
        "-c",
        "max_connections=300",
    ]
    return Proc("pg", "pg", argv, str(folder / "postgres.log"))


def postgres_ready() -> bool:
    try:
        with psycopg.connect(libpq("postgres"), connect_timeout=1) as conn:
            conn.execute("SELECT 1")
        return True
    except psycopg.Error:
        return False


def create_databases() -> None:
    with psycopg.connect(libpq("postgres"), autocommit=True) as conn:
        for name in ("orders", "stock"):
            found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
            if found.fetchone() is None:
                conn.execute(f'CREATE DATABASE "{name}"')


def libpq(database: str) -> str:
    pg = topology.host("pg")
    return f"host={pg.address} port={topology.PG_PORT} user=postgres dbname={database}"


# --- the services and haproxy -----------------------------------------------------------------


def service(replica: Host, home: Path, env: dict[str, str], workers: int, threads: int) -> Proc:
    module = "stock_service" if replica.role == "stock" else "order_service"
    argv = gunicorn_argv(module, f"0.0.0.0:{topology.SERVICE_PORT}", workers, threads)
    folder = home / replica.name
    folder.mkdir(parents=True, exist_ok=True)
    env = {**env, "PROMETHEUS_MULTIPROC_DIR": str(folder / "metrics")}  # one per replica
    return Proc(replica.name, replica.name, argv, str(folder / "gunicorn.log"), env)


def service_env(overrides: dict[str, str]) -> dict[str, str]:
    return {
        "ZK_HOSTS": topology.ZK_HOSTS,
        "REDIS_URL": topology.REDIS_URL,
        "ORDER_DATABASE_URL": topology.ORDER_DATABASE_URL,
        "STOCK_DATABASE_URL": topology.STOCK_DATABASE_URL,
        "STOCK_SERVICE_URL": topology.STOCK_URL,
        "PYTHONUNBUFFERED": "1",
        **topology.SERVICE_SETTINGS,
        **overrides,
    }


def haproxy(home: Path) -> Proc:
    folder = home / "lb"
    folder.mkdir(parents=True, exist_ok=True)
    lb = topology.host("lb").address
    sections = []
    for role, port in (("order", topology.LB_ORDER_PORT), ("stock", topology.LB_STOCK_PORT)):
        replicas = "".join(
            f"    server {h.name} {h.address}:{topology.SERVICE_PORT} check\n"
            for h in topology.by_role(role)
        )
        sections.append(
            f"frontend {role}\n    bind {lb}:{port}\n    default_backend {role}\n"
            f"backend {role}\n    option httpchk GET /healthz\n{replicas}"
        )
    config = folder / "haproxy.cfg"
    config.write_text(
        "global\n    maxconn 4096\n"
        "defaults\n    mode http\n    timeout connect 1s\n    timeout client 120s\n"
        "    timeout server 120s\n    timeout queue 10s\n"
        # Retried only when the connection to a replica failed: nothing was sent, so a
        # retry elsewhere cannot run an order twice.
        "    retries 3\n    option redispatch 1\n    retry-on conn-failure\n"
        "    default-server inter 500ms fall 2 rise 2\n" + "".join(sections)
    )
    return Proc("lb", "lb", ["haproxy", "-db", "-f", str(config)], str(folder / "haproxy.log"))
