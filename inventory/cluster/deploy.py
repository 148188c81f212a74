"""`inventory cluster up | down`: the cluster's hosts and programs, and its state file.

Everything lives under one folder (INVENTORY_CLUSTER_HOME, default /tmp/invc-cluster; not the
checkout, because PostgreSQL runs as the postgres user, which must be able to reach its data).
The credentials made at `up` are in its secrets file (0600, secrets.py); the state file names
programs, never passwords. `down` does not trust the state file: it kills whatever runs in a
namespace with the cluster's prefix and deletes those namespaces and links, so it also cleans
up after a crashed `up`.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import migrations
from inventory.cluster import (
    balancers,
    netns,
    nodes,
    pg_ha,
    pg_roles,
    redis_ha,
    skew,
    tls,
    topology,
    zk_acl,
)
from inventory.cluster.health import wait_replicas_healthy
from inventory.cluster.nodes import Proc
from inventory.cluster.secrets import Secrets
from inventory.local.servers import wait_until
from shared.config.settings import Settings

STATE_FILE = "cluster.json"
ROLES = ("stock", "order", "reconciler", "relay", "deliverer")  # the programs of ours, by identity
# What the replicas may be started with from the caller's environment (the rest is fixed).
PASSED_SETTINGS = ("LOCK_BACKEND", "LOCK_SCOPE", "FENCING", "DEDUCT_BATCH_MAX")
TOOLS = ("keepalived", "redis-sentinel", "redis-server")  # each its Debian package's name


def home_dir() -> Path:
    return Path(os.environ.get("INVENTORY_CLUSTER_HOME", "/tmp/invc-cluster")).resolve()


@dataclass
class ClusterState:
    home: str
    procs: dict[str, Proc] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)  # the replicas' overrides
    workers: int = 2
    threads: int = 8
    # ms added each way on the links to PostgreSQL and between its hosts (delay_proxy.py);
    # None: no proxy in the path
    link_delay_ms: float | None = None
    # Each skewed host's clock offset in seconds (skew.py: its programs under libfaketime);
    # empty: every host on the true clock
    skew: dict[str, float] = field(default_factory=dict)

    def save(self) -> None:
        path = Path(self.home, STATE_FILE)
        path.write_text(json.dumps(asdict(self), indent=2))

    @property
    def secrets(self) -> Secrets:
        return Secrets.load(Path(self.home))

    def admin_headers(self) -> dict[str, str]:
        """What a client sends to the replicas' admin routes (PUT /stock, /faults)."""
        return {"Authorization": f"Bearer {self.secrets.admin_token}"}

    def proc(self, name: str) -> Proc:
        return self.procs[name]

    def on_host(self, host: str) -> list[Proc]:
        return [p for p in self.procs.values() if p.host == host]


def load_state(home: Path | None = None) -> ClusterState | None:
    path = (home or home_dir()) / STATE_FILE
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    data["procs"] = {name: Proc(**p) for name, p in data["procs"].items()}
    return ClusterState(**data)


def require_tools() -> None:
    netns.require_root()
    pg_ha.require_patroni()
    missing = [tool for tool in TOOLS if not shutil.which(tool)]
    if missing:
        raise netns.NetworkError(
            f"missing {', '.join(missing)}: apt-get install {' '.join(missing)}"
        )


def up(
    workers: int = 2,
    threads: int = 8,
    settings: dict[str, str] | None = None,
    say: Any = print,
    link_delay_ms: float | None = None,
) -> ClusterState:
    require_tools()
    home = home_dir()
    overrides = {k: v for k, v in (settings or {}).items() if v is not None}
    existing = load_state(home)
    if existing and all(p.alive() for p in existing.procs.values()):
        say(f"cluster already running (state in {home / STATE_FILE})")
        return existing
    if netns.namespaces() or netns.links() or existing:
        say("clearing what an earlier cluster left behind")
        down(say=lambda *_: None)
    home.mkdir(parents=True, exist_ok=True)
    home.chmod(0o755)  # the postgres user reaches its data folder through it
    secrets = Secrets()
    secrets.tls_ca = str(tls.make_for_postgres(home) / tls.CA)
    tls.make_for_redis(home)
    tls.make_for_zookeeper(home)
    for role in ROLES:  # what a replica would refuse, refused now
        Settings.from_env({**nodes.base_env(overrides), **secrets.env_for(role)})
    say(f"credentials in {secrets.save(home)} (0600)")
    state = ClusterState(str(home), settings=overrides, workers=workers, threads=threads)
    state.link_delay_ms = link_delay_ms
    state.save()
    try:
        _bring_up(state, secrets, say)
    except BaseException:
        down(say=lambda *_: None)
        raise
    return state


def _bring_up(state: ClusterState, secrets: Secrets, say: Any) -> None:
    home = Path(state.home)
    netns.make_bridge()
    for h in topology.HOSTS:
        netns.make_host(h.namespace, h.address)
    say(f"{len(topology.HOSTS)} hosts on {netns.BRIDGE} ({netns.SUBNET}.0/24)")
    ensemble = [nodes.zookeeper(zk, home, secrets) for zk in topology.by_role("zookeeper")]
    for proc in ensemble:
        start(state, proc)
    wait_until(
        nodes.ensemble_ready,
        90,
        "ZooKeeper ensemble",
        Path(ensemble[0].log),
        0.25,
        alive=lambda: all(p.alive() for p in ensemble),
    )
    zk_acl.lay_out(secrets)
    say(f"ZooKeeper ensemble (leader {nodes.zk_leader()}), its paths' ACLs laid out")
    for node in topology.by_role("redis"):
        start(state, nodes.redis_server(node, home, secrets))
    for node in topology.SENTINELS:
        start(state, nodes.sentinel(node, home, secrets))
    first, *others = topology.by_role("postgres")
    proxied = state.link_delay_ms is not None
    if state.link_delay_ms is not None:
        for pg in topology.by_role("postgres"):
            start(state, nodes.link_delay(pg, home, state.link_delay_ms))
        say(f"a proxy adding {state.link_delay_ms} ms each way in front of each PostgreSQL")
    start(state, nodes.patroni(first, home, secrets, proxied))  # it bootstraps; others copy it
    for lb in topology.by_role("haproxy"):
        start(state, nodes.haproxy(lb, home, proxied))
        start(state, nodes.keepalived(lb, home))
    wait_until(lambda: pg_ha.primary() is not None, 90, "PostgreSQL primary", Path(home, "pg1.log"))
    for pg in others:
        start(state, nodes.patroni(pg, home, secrets, proxied))
    pg_roles.create_roles_and_databases(secrets)
    wait_until(
        lambda: balancers.vip_holder() is not None, 30, f"a load balancer holding {topology.VIP}"
    )
    wait_until(
        partial(pg_ha.reachable_as, "orders", "orders", secrets),
        30,
        f"PostgreSQL through {topology.VIP}",
        interval=0.5,
    )
    migrations.upgrade(secrets.database_url("orders", "orders"), "order")
    migrations.upgrade(secrets.database_url("stock", "stock"), "stock")
    pg_roles.grant_programs(secrets)
    wait_until(pg_ha.replicated, 120, "a synchronous PostgreSQL standby", interval=0.5)
    if not pg_ha.timing_applied():  # a newer Patroni raises short timings: say so, loudly
        say(f"WARNING: Patroni does not run with {pg_ha.TIMING}: failovers will be slower")
    wait_until(
        partial(redis_ha.replicated, secrets), 60, "Redis replica and sentinels", interval=0.5
    )
    say(
        f"PostgreSQL {pg_ha.primary().name} primary, synchronous standby streaming (Patroni); "  # type: ignore[union-attr]
        f"Redis {redis_ha.primary(secrets).name} primary with a replica, 3 sentinels; "  # type: ignore[union-attr]
        f"{balancers.vip_holder()} holds {topology.VIP}"
    )
    _replace(state, _services(state, {}))
    say(
        "2 stock and 2 order replicas healthy behind haproxy; "
        f"{len(topology.RECONCILERS)} elected reconcilers on the order hosts, "
        f"{len(topology.RELAYS)} elected relays of the stock events and "
        f"{len(topology.DELIVERERS)} deliverers of webhooks on the stock hosts"
    )


def start(state: ClusterState, proc: Proc) -> None:
    proc.start(Path(state.home))
    state.procs[proc.name] = proc
    state.save()


def on_its_clock(state: ClusterState, proc: Proc) -> Proc:
    """The program with its host's clock offset (state.skew; skew.py), when it has one."""
    offset = state.skew.get(proc.host)
    if offset is not None:
        proc.env.update(skew.env(offset))
    return proc


def _services(state: ClusterState, stock_added: dict[str, str]) -> list[Proc]:
    """The replicas of both services (the stock ones with `stock_added` on top of the
    settings), the elected reconcilers on the order hosts, the elected relays of the stock
    events and deliverers of webhooks on the stock hosts, each on its host's clock."""
    home, own = Path(state.home), state.settings
    Settings.from_env({**nodes.base_env({**own, **stock_added}), **state.secrets.env_for("stock")})
    shape = (state.workers, state.threads)
    procs = [
        nodes.service(h, home, {**own, **stock_added} if h.role == "stock" else own, *shape)
        for h in topology.by_role("stock") + topology.by_role("order")
    ]
    for name, on in topology.RECONCILERS.items():
        procs.append(nodes.reconciler(name, topology.host(on), home, own))
    for name, on in topology.RELAYS.items():
        procs.append(nodes.relay(name, topology.host(on), home, own))
    for name, on in topology.DELIVERERS.items():
        procs.append(nodes.deliverer(name, topology.host(on), home, own))
    return [on_its_clock(state, p) for p in procs]


def _replace(state: ClusterState, procs: list[Proc]) -> None:
    """Those programs killed, then started again as given, at once; then healthy."""
    for proc in procs:
        if proc.name in state.procs:
            state.procs[proc.name].kill()
    for proc in procs:
        start(state, proc)
    wait_replicas_healthy(state)


def restart_services(
    state: ClusterState,
    settings: dict[str, str],
    stock_added: dict[str, str] | None = None,
    clocks: dict[str, float] | None = None,
) -> None:
    """Every program of ours again: with other settings (chaos with another lock or without
    fencing), `stock_added` on the stock replicas (FAULT_INJECTION), each host on the clock
    `clocks` gives it (host -> offset; None: as they are; {}: every host on the true clock)."""
    state.settings = {k: v for k, v in settings.items() if v is not None}
    for role in ROLES:
        Settings.from_env({**nodes.base_env(state.settings), **state.secrets.env_for(role)})
    if clocks is not None:
        state.skew = dict(clocks)
    _replace(state, _services(state, stock_added or {}))  # libfaketime missing: before a kill


def stock_settings_added(state: ClusterState) -> dict[str, str]:
    """What the stock replicas run with on top of the cluster's settings (a chaos run's
    FAULT_INJECTION), from the state file: {} as `up` started them. A host's clock (skew.py)
    is not a setting."""
    base = {**nodes.base_env(state.settings), "PROMETHEUS_MULTIPROC_DIR": ""}
    added: dict[str, str] = {}
    for replica in topology.by_role("stock"):
        proc = state.procs.get(replica.name)
        if proc is not None:
            added.update({k: v for k, v in proc.env.items() if k not in {*base, *skew.ENV_KEYS}})
    return added


def restart_stock_replicas(state: ClusterState, added: dict[str, str]) -> None:
    """The stock replicas again, with `added` on top of the cluster's settings (a chaos fault
    that needs the stock service's fault points: FAULT_INJECTION=true), or, with {}, as `up`
    started them. The order replicas, the reconcilers and the relays keep running."""
    stock = {h.name for h in topology.by_role("stock")}
    _replace(state, [p for p in _services(state, added) if p.name in stock])


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
