"""The programs the cluster runs, each inside its host: how each is started, found ready, and
restarted after the nemesis killed it.

A `Proc` keeps its argv and environment in the cluster's state file, so a restart (by the
nemesis, or by `cluster up` on a half-dead cluster) starts exactly what `up` started. Its
credentials are not among them: a Proc names the identity it runs as, and gets that
identity's secrets from the secrets file when it starts (secrets.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path

from inventory.cluster import (
    balancers,
    delay_proxy,
    netns,
    pg_ha,
    redis_ha,
    tls,
    topology,
    zk_acl,
)
from inventory.cluster.secrets import Secrets
from inventory.cluster.topology import Host
from inventory.local import servers
from inventory.local.ensemble import zk_mode
from inventory.local.gunicorn import gunicorn_argv, service_shape
from inventory.local.servers import wait_until


@dataclass
class Proc:
    name: str
    host: str
    argv: list[str]
    log: str
    env: dict[str, str] = field(default_factory=dict)
    identity: str = ""  # whose credentials it gets at start (Secrets.env_for)
    pid: int = 0

    @property
    def namespace(self) -> str:
        return topology.host(self.host).namespace

    def start(self, home: Path) -> None:
        credentials = Secrets.load(home).env_for(self.identity) if self.identity else {}
        self.pid = servers.spawn(
            netns.in_host(self.namespace, self.argv),
            Path(self.log),
            home,
            {**os.environ, **self.env, **credentials},
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


def zookeeper(zk: Host, home: Path, secrets: Secrets) -> Proc:
    folder = home / zk.name
    (folder / "data").mkdir(parents=True, exist_ok=True)
    members = topology.by_role("zookeeper")
    (folder / "data" / "myid").write_text(f"{members.index(zk) + 1}\n")
    peers = "".join(
        f"server.{i + 1}={m.address}:{topology.ZK_PEER_PORT}:{topology.ZK_ELECTION_PORT}\n"
        for i, m in enumerate(members)
    )
    # With TLS (tls.py): the client port speaks TLS only, and the members' links too.
    listen = (
        tls.zookeeper_server_lines(secrets.tls_ca, topology.ZK_PORT)
        if secrets.tls_ca
        else f"clientPort={topology.ZK_PORT}\n"
    )
    (folder / "zoo.cfg").write_text(
        "tickTime=500\ninitLimit=20\nsyncLimit=4\n"
        "minSessionTimeout=1000\nmaxSessionTimeout=60000\n"
        f"dataDir={folder / 'data'}\n{listen}"
        "maxClientCnxns=0\nadmin.enableServer=false\n"
        "4lw.commands.whitelist=ruok,srvr,stat,mntr\n" + peers
    )
    argv = servers.zookeeper_argv(folder, folder / "zoo.cfg")
    # JVM flags: before the class name
    argv[1:1] = [zk_acl.super_digest_flag(secrets), topology.ZK_ELECTION_FLAG]
    if secrets.tls_ca:  # Debian's zookeeper.jar names netty's handler but not the codec it needs
        classpath = argv.index("-cp") + 1
        argv[classpath] += ":" + ":".join(str(j) for j in tls.ZK_NETTY_JARS)
    return Proc(zk.name, zk.name, argv, str(folder / "zookeeper.log"))


def zk_modes() -> dict[str, str | None]:
    ca = tls.cluster_ca()
    context = tls.zk_context(ca) if ca else None
    return {
        h.name: zk_mode(topology.ZK_PORT, h.address, context) for h in topology.by_role("zookeeper")
    }


def ensemble_ready() -> bool:
    modes = list(zk_modes().values())
    return modes.count("leader") == 1 and modes.count("follower") == len(modes) - 1


def zk_leader() -> str | None:
    return next((name for name, mode in zk_modes().items() if mode == "leader"), None)


def reconciler_leader(timeout: float = 3.0) -> str | None:
    """The name of the elected reconciler that leads now, or None."""
    from order_service.settling.reconciler import ELECTION_PATH

    return singleton_leader(ELECTION_PATH, timeout)


def relay_leader(timeout: float = 3.0) -> str | None:
    """The name of the elected relay of the stock events that leads now, or None."""
    from stock_service.ledger.relay import ELECTION_PATH

    return singleton_leader(ELECTION_PATH, timeout)


def deliverer_leader(timeout: float = 3.0) -> str | None:
    """The name of the elected deliverer of webhooks that leads now, or None."""
    from stock_service.webhooks import ELECTION_PATH

    return singleton_leader(ELECTION_PATH, timeout)


def singleton_leader(election_path: str, timeout: float = 3.0) -> str | None:
    """The name of an elected singleton that leads now (the contender whose node is first in
    its election's queue), or None when none is elected or ZooKeeper cannot say."""
    from kazoo.client import KazooClient
    from kazoo.exceptions import KazooException
    from kazoo.handlers.threading import KazooTimeoutError

    from coordination.locks.zookeeper.claim import SEQUENCE

    client = KazooClient(
        hosts=topology.ZK_HOSTS,
        timeout=timeout,
        **tls.kazoo_kwargs(tls.cluster_ca()),
    )
    try:
        client.start(timeout=timeout)
        queue = [
            (match.group(1), child)
            for child in client.get_children(election_path)
            if (match := SEQUENCE.search(child))
        ]
        if not queue:
            return None
        data, _ = client.get(f"{election_path}/{min(queue)[1]}")
        return data.decode() or None
    except (KazooException, KazooTimeoutError):
        return None
    finally:
        client.stop()
        client.close()


# --- Redis, its sentinels, PostgreSQL under Patroni, the load balancers ----------------------


def _folder(home: Path, name: str, private: bool = False) -> Path:
    """A program's folder; `private` (0700) where configs hold passwords and the program
    rewrites them itself with its own file mode (Redis and its sentinels: CONFIG REWRITE)."""
    folder = home / name
    folder.mkdir(parents=True, exist_ok=True)
    if private:
        folder.chmod(0o700)
    return folder


def redis_server(node: Host, home: Path, secrets: Secrets) -> Proc:
    folder = _folder(home, node.name, private=True)
    config = redis_ha.server_config(node, folder, secrets)
    return Proc(node.name, node.name, ["redis-server", str(config)], str(folder / "redis.log"))


def sentinel(node: Host, home: Path, secrets: Secrets) -> Proc:
    """A Redis sentinel on a ZooKeeper host (named `s-zk1`...)."""
    folder = _folder(home, f"s-{node.name}", private=True)
    config = redis_ha.sentinel_config(node, folder, secrets)
    argv = ["redis-sentinel", str(config)]
    return Proc(f"s-{node.name}", node.name, argv, str(folder / "sentinel.log"))


def patroni(pg: Host, home: Path, secrets: Secrets, proxied: bool = False) -> Proc:
    argv = pg_ha.patroni_argv(pg, home, secrets, proxied)
    return Proc(pg.name, pg.name, argv, str(home / f"{pg.name}.log"), identity="patroni")


def haproxy(lb: Host, home: Path, proxied: bool = False) -> Proc:
    folder = _folder(home, lb.name)
    config = balancers.haproxy_config(lb, folder, proxied)
    return Proc(
        lb.name, lb.name, ["haproxy", "-db", "-f", str(config)], str(folder / "haproxy.log")
    )


def link_delay(pg: Host, home: Path, delay_ms: float) -> Proc:
    """The delaying proxy in front of a database host's PostgreSQL (delay_proxy.py): the
    balancers and the other database host's replication connect through it. Its delay is read
    again from `link-delay-ms` in its folder on SIGHUP."""
    folder = _folder(home, f"delay-{pg.name}")
    (folder / "link-delay-ms").write_text(f"{delay_ms}\n")
    argv = [
        sys.executable, "-m", "inventory.cluster.delay_proxy",
        "--listen", f"{pg.address}:{delay_proxy.PORT}",
        "--target", f"{pg.address}:{topology.PG_PORT}",
        "--delay-ms", str(delay_ms), "--delay-file", str(folder / "link-delay-ms"),
    ]  # fmt: skip
    return Proc(f"delay-{pg.name}", pg.name, argv, str(folder / "delay.log"))


def keepalived(lb: Host, home: Path) -> Proc:
    folder = _folder(home, lb.name)
    argv = balancers.keepalived_argv(lb, folder)
    return Proc(f"vrrp-{lb.name}", lb.name, argv, str(folder / "keepalived.log"))


# --- the services and the reconcilers ---------------------------------------------------------


def base_env(overrides: dict[str, str]) -> dict[str, str]:
    """What every service process runs with besides its credentials."""
    return {
        "ZK_HOSTS": topology.ZK_HOSTS,
        "STOCK_SERVICE_URL": topology.STOCK_URL,
        "PYTHONUNBUFFERED": "1",
        **topology.SERVICE_SETTINGS,
        **overrides,
    }


def service(
    replica: Host, home: Path, overrides: dict[str, str], workers: int, threads: int
) -> Proc:
    """A replica of its service under gunicorn: `workers` x `threads` is the stock service's
    shape, the order service's follows from it (inventory/local/gunicorn.py's service_shape)."""
    module = "stock_service" if replica.role == "stock" else "order_service"
    shape = service_shape(module, workers, threads, overrides.get("LOCK_BACKEND"))
    argv = gunicorn_argv(module, f"0.0.0.0:{topology.SERVICE_PORT}", *shape)
    folder = _folder(home, replica.name)
    env = {**base_env(overrides), "PROMETHEUS_MULTIPROC_DIR": str(folder / "metrics")}
    log = str(folder / "gunicorn.log")
    return Proc(replica.name, replica.name, argv, log, env, identity=replica.role)


def reconciler(name: str, host: Host, home: Path, overrides: dict[str, str]) -> Proc:
    """An instance of the elected reconciler (`inventory reconciler`), on an order host."""
    folder = _folder(home, name)
    argv = [sys.executable, "-m", "inventory.cli", "reconciler", "--name", name]
    log = str(folder / "reconciler.log")
    return Proc(name, host.name, argv, log, base_env(overrides), identity="reconciler")


def relay(name: str, host: Host, home: Path, overrides: dict[str, str]) -> Proc:
    """An instance of the elected relay of the stock events (`python -m stock_service.ledger.relay`,
    the product's own program), on a stock host."""
    folder = _folder(home, name)
    argv = [sys.executable, "-m", "stock_service.ledger.relay", "--name", name]
    env = {**base_env(overrides), **topology.RELAY_SETTINGS}
    return Proc(name, host.name, argv, str(folder / "relay.log"), env, identity="relay")


def deliverer(name: str, host: Host, home: Path, overrides: dict[str, str]) -> Proc:
    """An instance of the elected deliverer of webhooks (`python -m
    stock_service.webhooks.deliverer`, the product's own program), on a stock host."""
    folder = _folder(home, name)
    argv = [sys.executable, "-m", "stock_service.webhooks.deliverer", "--name", name]
    log = str(folder / "deliverer.log")
    env = {**base_env(overrides), **topology.DELIVERER_SETTINGS}
    return Proc(name, host.name, argv, log, env, identity="deliverer")
