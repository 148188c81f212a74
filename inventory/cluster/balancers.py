"""The load balancers: haproxy on two hosts that share one address (keepalived, VRRP).

Each haproxy routes
- the order and stock services to their replicas, health-checked on /healthz, and retries a
  request elsewhere only when the connection to a replica failed (nothing was sent: the one
  retry that is always safe for a POST);
- PostgreSQL (TCP) to whichever database host is primary, asking each Patroni's REST API
  (GET /primary answers 200 on the running primary only); connections to a former primary are
  cut when it is marked down, so no client keeps writing to a demoted server.

keepalived on both hosts elects which holds VIP: lb1 by priority at start, then whichever holds
it while its haproxy answers (its track script connects to haproxy's own monitor port; no
preemption); when the holder dies or its haproxy does, the other takes the address over once
three VRRP adverts are missed (VRRP version 3, adverts ADVERT_INT apart: under a second, where
version 2's whole-second adverts took about 3.5 s) and announces it (gratuitous ARP).
Unicast VRRP between the two hosts' own addresses, as a bridge of namespaces carries it like
any LAN. Every client (the buyers, the order service calling the stock service, the services'
database connections) uses VIP.
"""

from __future__ import annotations

from pathlib import Path

from inventory.cluster import delay_proxy, topology
from inventory.cluster.topology import Host

# The latency bench's peer (inventory/cluster/latency_peer.py) on the order hosts, and the
# balancers' port for it (only with the links delayed).
PEER_PORT, LB_PEER_PORT = 8090, 8083
MONITOR_PORT = 8404  # haproxy's own liveness (monitor-uri), what keepalived tracks
VRRP_ROUTER_ID = 77
# VRRP version 3 counts adverts in centiseconds. The backup takes over after 3 adverts and a
# skew (3.6 x 0.25 = 0.9 s); shorter would make a starved keepalived (2 loaded cores) hand the
# address over to a live peer, a gap of its own.
ADVERT_INT = 0.25
# The checks of Patroni's GET /primary: every 0.5 s, up after 1 success (a promoted standby
# takes the traffic at once), down after 4 failures in a row (2 s). A dead Patroni is down
# after 2 s whatever its connections do (they died with its host). A primary cut off from
# ZooKeeper answers 503 if its Patroni, blocked on the lost ensemble, renews its leadership
# (through failsafe mode) later than the ttl; `fall 4` rides such a moment out rather than
# cutting every session to a primary that stays one (docs/cluster.md, how long a failover
# takes).
PG_CHECK = "inter 500ms fall 4 rise 1"


def haproxy_config(lb: Host, folder: Path, proxied: bool = False) -> Path:
    """`proxied` (the cluster's links delayed): PostgreSQL reached through the delaying proxy
    on each database host (Patroni's check stays on its own port), and the latency bench's
    one-database peer routed to the order hosts like the order service."""
    pg_port = delay_proxy.PORT if proxied else topology.PG_PORT
    routes = [("order", topology.LB_ORDER_PORT, topology.SERVICE_PORT)]
    routes.append(("stock", topology.LB_STOCK_PORT, topology.SERVICE_PORT))
    if proxied:
        routes.append(("peer", LB_PEER_PORT, PEER_PORT))
    sections = [f"frontend alive\n    bind {lb.address}:{MONITOR_PORT}\n    monitor-uri /alive\n"]
    for role, port, replica_port in routes:
        replicas = "".join(
            f"    server {h.name} {h.address}:{replica_port} check\n"
            for h in topology.by_role("order" if role == "peer" else role)
        )
        sections.append(
            f"frontend {role}\n    bind :{port}\n    default_backend {role}\n"
            f"backend {role}\n    option httpchk GET /healthz\n"
            # Retried only when the connection to a replica failed: nothing was sent, so a
            # retry elsewhere cannot run an order twice.
            "    retries 3\n    option redispatch 1\n    retry-on conn-failure\n"
            f"    default-server inter 500ms fall 2 rise 2\n{replicas}"
        )
    databases = "".join(
        f"    server {h.name} {h.address}:{pg_port} check port {topology.PATRONI_PORT}\n"
        for h in topology.by_role("postgres")
    )
    sections.append(
        f"listen postgres\n    mode tcp\n    bind :{topology.LB_PG_PORT}\n"
        # Pooled connections sit idle between bursts: long timeouts, pre-ping in the pools.
        "    timeout client 30m\n    timeout server 30m\n"
        # OPTIONS, as Patroni's documentation has it: the status alone, no body to cut off.
        "    option httpchk OPTIONS /primary\n    http-check expect status 200\n"
        f"    default-server {PG_CHECK} on-marked-down shutdown-sessions\n" + databases
    )
    path = folder / "haproxy.cfg"
    path.write_text(
        "global\n    maxconn 4096\n"
        "defaults\n    mode http\n    timeout connect 1s\n    timeout client 120s\n"
        "    timeout server 120s\n    timeout queue 10s\n" + "".join(sections)
    )
    return path


def keepalived_config(lb: Host, folder: Path) -> Path:
    peers = [h for h in topology.by_role("haproxy") if h != lb]
    priority = 150 - 50 * topology.by_role("haproxy").index(lb)
    alive = f"exec 3<>/dev/tcp/{lb.address}/{MONITOR_PORT}"
    path = folder / "keepalived.conf"
    path.write_text(
        "global_defs {\n"
        f"    router_id {lb.name}\n    enable_script_security\n    script_user root\n"
        "    vrrp_version 3\n"  # sub-second adverts (version 2 counts whole seconds)
        "}\n"
        "vrrp_script haproxy_alive {\n"
        f"    script \"/bin/bash -c '{alive}'\"\n"
        "    interval 1\n    timeout 1\n    fall 2\n    rise 2\n"
        "}\n"
        "vrrp_instance lb {\n"
        # nopreempt: a balancer back from the dead does not take the address back from one
        # that serves (that would be a second, needless gap); priority only breaks the tie
        # at start.
        "    state BACKUP\n    nopreempt\n    interface eth0\n"
        f"    virtual_router_id {VRRP_ROUTER_ID}\n    priority {priority}\n"
        f"    advert_int {ADVERT_INT}\n"
        f"    unicast_src_ip {lb.address}\n"
        "    unicast_peer {\n" + "".join(f"        {p.address}\n" for p in peers) + "    }\n"
        f"    virtual_ipaddress {{\n        {topology.VIP}/24 dev eth0\n    }}\n"
        "    track_script {\n        haproxy_alive\n    }\n"
        "}\n"
    )
    return path


def keepalived_argv(lb: Host, folder: Path) -> list[str]:
    """In the foreground, logging to the console, VRRP only; its pid files in the host's
    folder (the hosts share one filesystem, and keepalived's default pid file is global)."""
    config = keepalived_config(lb, folder)
    return [
        "keepalived",
        "--dont-fork",
        "--log-console",
        "--vrrp",
        f"--use-file={config}",
        f"--pid={folder / 'keepalived.pid'}",
        f"--vrrp_pid={folder / 'vrrp.pid'}",
    ]


def vip_holder() -> str | None:
    """Which load balancer holds VIP now (None: neither)."""
    from inventory.cluster import netns

    for lb in topology.by_role("haproxy"):
        shown = netns.run(
            ["ip", "-n", lb.namespace, "-o", "addr", "show", "dev", "eth0"], check=False
        ).stdout
        if f" {topology.VIP}/" in shown:
            return lb.name
    return None
