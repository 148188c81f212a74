"""`inventory cluster up | down | status`: the cluster's hosts and programs, and its state file.

Everything lives under one folder (INVENTORY_CLUSTER_HOME, default /tmp/invc-cluster; not the
checkout, because PostgreSQL runs as the postgres user, which must be able to reach its data).
`down` does not trust the state file: it kills whatever runs in a namespace with the cluster's
prefix and deletes those namespaces and links, so it also cleans up after a crashed `up`.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import httpx

import migrations
from inventory.cluster import netns, nodes, topology
from inventory.cluster.nodes import Proc
from inventory.servers import wait_until
from shared.settings import Settings

STATE_FILE = "cluster.json"
# What the replicas may be started with from the caller's environment (the rest is fixed).
PASSED_SETTINGS = ("LOCK_BACKEND", "LOCK_SCOPE", "FENCING", "DEDUCT_BATCH_MAX")


def home_dir() -> Path:
    return Path(os.environ.get("INVENTORY_CLUSTER_HOME", "/tmp/invc-cluster")).resolve()


@dataclass
class ClusterState:
    home: str
    procs: dict[str, Proc] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)  # the replicas' overrides
    workers: int = 2
    threads: int = 8

    def save(self) -> None:
        data = asdict(self)
        path = Path(self.home, STATE_FILE)
        path.touch(mode=0o600)  # it holds the admin token: readable by its owner only
        path.chmod(0o600)
        path.write_text(json.dumps(data, indent=2))

    def admin_headers(self) -> dict[str, str]:
        """What a client sends to the replicas' admin routes (PUT /stock, /faults)."""
        return {"Authorization": f"Bearer {self.settings.get('ADMIN_TOKEN', '')}"}

    def proc(self, name: str) -> Proc:
        return self.procs[name]

    def status(self) -> dict[str, Any]:
        modes = nodes.zk_modes()
        hosts = []
        for h in topology.HOSTS:
            proc = self.procs.get(h.name)
            role = h.role
            if h.role == "zookeeper":
                role = f"zookeeper {modes.get(h.name) or 'down'}"
            hosts.append(
                {
                    "name": h.name,
                    "namespace": h.namespace,
                    "address": h.address,
                    "role": role,
                    "pid": proc.pid if proc else None,
                    "workers": proc.workers() if proc and h.role in ("stock", "order") else [],
                    "running": bool(proc and proc.alive()),
                }
            )
        return {
            "home": self.home,
            "order_url": topology.ORDER_URL,
            "stock_url": topology.STOCK_URL,
            "zk_hosts": topology.ZK_HOSTS,
            "redis_url": topology.REDIS_URL,
            "order_database_url": topology.ORDER_DATABASE_URL,
            "stock_database_url": topology.STOCK_DATABASE_URL,
            "settings": self.settings,
            "hosts": hosts,
        }


def load_state(home: Path | None = None) -> ClusterState | None:
    path = (home or home_dir()) / STATE_FILE
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    data["procs"] = {name: Proc(**p) for name, p in data["procs"].items()}
    return ClusterState(**data)


def up(
    workers: int = 2,
    threads: int = 8,
    settings: dict[str, str] | None = None,
    say: Any = print,
) -> ClusterState:
    netns.require_root()
    home = home_dir()
    overrides = {k: v for k, v in (settings or {}).items() if v is not None}
    # The replicas' admin token: the environment's, or one made for this cluster.
    overrides.setdefault("ADMIN_TOKEN", os.environ.get("ADMIN_TOKEN") or secrets.token_urlsafe(24))
    env = {**nodes.service_env(overrides)}
    Settings.from_env(env)  # what the replicas would refuse, refused before anything starts
    existing = load_state(home)
    if existing and all(p.alive() for p in existing.procs.values()):
        say(f"cluster already running (state in {home / STATE_FILE})")
        return existing
    if netns.namespaces() or netns.links() or existing:
        say("clearing what an earlier cluster left behind")
        down(say=lambda *_: None)
    home.mkdir(parents=True, exist_ok=True)
    home.chmod(0o755)  # the postgres user reaches its data folder through it
    state = ClusterState(str(home), settings=overrides, workers=workers, threads=threads)
    state.save()
    try:
        netns.make_bridge()
        for h in topology.HOSTS:
            netns.make_host(h.namespace, h.address)
        say(f"{len(topology.HOSTS)} hosts on {netns.BRIDGE} ({netns.SUBNET}.0/24)")
        backing = [nodes.zookeeper(zk, home) for zk in topology.by_role("zookeeper")]
        backing += [nodes.redis(home), nodes.postgres(home)]
        for proc in backing:
            start(state, proc)
        wait_until(
            nodes.ensemble_ready,
            90,
            "ZooKeeper ensemble",
            Path(backing[0].log),
            0.25,
            alive=lambda: all(p.alive() for p in backing[:3]),
        )
        wait_until(nodes.redis_ready, 20, "Redis", Path(state.proc("redis").log))
        wait_until(nodes.postgres_ready, 30, "PostgreSQL", Path(state.proc("pg").log))
        say(f"ZooKeeper ensemble (leader {nodes.zk_leader()}), Redis, PostgreSQL up")
        nodes.create_databases()
        migrations.upgrade(topology.ORDER_DATABASE_URL, "order")
        migrations.upgrade(topology.STOCK_DATABASE_URL, "stock")
        start_services(state)
        start(state, nodes.haproxy(home))
        wait_replicas_healthy(state)
        say("2 stock and 2 order replicas healthy behind haproxy")
    except BaseException:
        down(say=lambda *_: None)
        raise
    return state


def start(state: ClusterState, proc: Proc) -> None:
    proc.start(Path(state.home))
    state.procs[proc.name] = proc
    state.save()


def start_services(state: ClusterState) -> None:
    home, env = Path(state.home), nodes.service_env(state.settings)
    for replica in topology.by_role("stock") + topology.by_role("order"):
        threads = state.threads if replica.role == "stock" else state.threads * 2
        start(state, nodes.service(replica, home, env, state.workers, threads))


def restart_services(state: ClusterState, settings: dict[str, str]) -> None:
    """The replicas again with other settings (chaos with another lock or without fencing)."""
    replicas = [h.name for h in topology.HOSTS if h.role in ("stock", "order")]
    for name in replicas:
        if name in state.procs:
            state.procs[name].kill()
    state.settings = {k: v for k, v in settings.items() if v is not None}
    Settings.from_env(nodes.service_env(state.settings))
    start_services(state)
    wait_replicas_healthy(state)


def replica_healthy(address: str) -> bool:
    try:
        url = f"http://{address}:{topology.SERVICE_PORT}/healthz"
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def wait_replicas_healthy(state: ClusterState, timeout: float = 90) -> None:
    """Every replica answers /healthz, and haproxy has a replica of each service up."""
    replicas = [h for h in topology.HOSTS if h.role in ("stock", "order")]
    with ThreadPoolExecutor(len(replicas)) as pool:
        list(
            pool.map(
                lambda h: wait_until(
                    lambda: replica_healthy(h.address),
                    timeout,
                    f"{h.name} replica",
                    Path(state.proc(h.name).log),
                    0.25,
                    alive=state.proc(h.name).alive,
                ),
                replicas,
            )
        )
    for url in (topology.ORDER_URL, topology.STOCK_URL):
        wait_until(partial(_ok, f"{url}/healthz"), 30, f"haproxy at {url}", interval=0.25)


def _ok(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def down(say: Any = print) -> dict[str, int]:
    netns.require_root()
    counts = netns.teardown()
    home = home_dir()
    had_home = home.exists()
    if had_home:
        shutil.rmtree(home, ignore_errors=True)
    say(
        f"stopped {counts['processes']} processes, removed {counts['namespaces']} namespaces "
        f"and {counts['links']} links" + (f"; removed {home}" if had_home else "")
    )
    return counts
