"""`inventory cluster status`: each host, what runs on it and in which role now (ZooKeeper leader
or follower, Redis primary or replica, PostgreSQL primary or synchronous standby, which load
balancer holds the shared address), the elected reconcilers, relays of the stock events and
deliverers of webhooks, and where the credentials are: their file's path, never their values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inventory.cluster import balancers, nodes, pg_ha, redis_ha, topology
from inventory.cluster.deploy import ClusterState
from inventory.cluster.secrets import FILE

# elected programs, not hosts' own
SINGLETONS = {**topology.RECONCILERS, **topology.RELAYS, **topology.DELIVERERS}


def singletons(state: ClusterState, where: dict[str, str], leader: str | None) -> list[Any]:
    """Each instance of an elected program: its host, whether it runs, whether it leads."""
    return [
        {
            "name": name,
            "host": on,
            "pid": state.procs[name].pid if name in state.procs else None,
            "running": bool(name in state.procs and state.procs[name].alive()),
            "leader": name == leader,
        }
        for name, on in where.items()
    ]


def role_now(host: topology.Host, state: ClusterState, views: dict[str, Any]) -> str:
    if host.role == "zookeeper":
        return f"zookeeper {views['zk'].get(host.name) or 'down'} + sentinel"
    if host.role == "redis":
        now = redis_ha.role_of(host, state.secrets)
        return {"master": "redis primary", None: "redis down"}.get(now, f"redis replica ({now})")
    if host.role == "postgres":
        member = views["pg"].get(host.name, {})
        return f"postgres {member.get('role', 'down')} ({member.get('state', 'not running')})"
    if host.role == "haproxy":
        holds = views["vip"] == host.name
        return "haproxy + keepalived" + (f", holds {topology.VIP}" if holds else "")
    return host.role


def status(state: ClusterState) -> dict[str, Any]:
    views = {"zk": nodes.zk_modes(), "pg": pg_ha.members(), "vip": balancers.vip_holder()}
    hosts = []
    for h in topology.HOSTS:
        procs = [p for p in state.on_host(h.name) if p.name not in SINGLETONS]
        hosts.append(
            {
                "name": h.name,
                "namespace": h.namespace,
                "address": h.address,
                "role": role_now(h, state, views),
                "programs": {p.name: p.pid for p in procs},
                "workers": [w for p in procs for w in p.workers()]
                if h.role in ("stock", "order")
                else [],
                # The intruder runs nothing of the cluster's: it has only its address.
                "running": all(p.alive() for p in procs),
            }
        )
    return {
        "home": state.home,
        "secrets_file": str(Path(state.home, FILE)),
        "reconcilers": singletons(state, topology.RECONCILERS, nodes.reconciler_leader()),
        "relays": singletons(state, topology.RELAYS, nodes.relay_leader()),
        "deliverers": singletons(state, topology.DELIVERERS, nodes.deliverer_leader()),
        "order_url": topology.ORDER_URL,
        "stock_url": topology.STOCK_URL,
        "database": f"{topology.VIP}:{topology.LB_PG_PORT} (haproxy -> the Patroni primary)",
        "redis": f"sentinels {', '.join(h.address for h in topology.SENTINELS)}, "
        f"master name {topology.REDIS_MASTER}",
        "zk_hosts": topology.ZK_HOSTS,
        "settings": state.settings,
        "hosts": hosts,
    }
