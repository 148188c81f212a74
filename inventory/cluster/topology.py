"""Which hosts the cluster has, their addresses and ports, and the settings its services run
with. No host is single: three ZooKeeper members; two PostgreSQL hosts under Patroni
(synchronous replication, the primary found through Patroni's REST API); a Redis primary and
replica watched by three sentinels on other hosts; two stock and two order replicas; two
reconcilers; two relays of the stock events; two deliverers of webhooks; two load balancers
sharing one address (keepalived, VRRP). And one intruder, a host with no credential at all.

Why haproxy in front of each service rather than a list of URLs with failover in the order
service: the services stay unaware of how many replicas there are; haproxy's health checks take
a replica out within a second of its /healthz failing (a stock replica cut off from ZooKeeper
says so), and it retries a request only when the connection to a replica failed, i.e. when
nothing was sent, which is the one retry that is always safe for a POST. Two of them share the
virtual address VIP: the one that holds it dies, the other takes it over (keepalived).
"""

from __future__ import annotations

from dataclasses import dataclass

from inventory.cluster.netns import PREFIX, SUBNET

ZK_PORT, ZK_PEER_PORT, ZK_ELECTION_PORT = 2181, 2888, 3888
# A member without a quorum looks for one with a notification timeout that doubles up to a
# minute (ZooKeeper's default): after a 10 s partition without quorum the members found each
# other again 5.3 s after the heal (the chaos run's zk-partition-majority). Capped at 1 s, they
# look about once a second (a JVM flag of each member; ZooKeeper 3.6 and later read it).
ZK_ELECTION_FLAG = "-Dzookeeper.fastleader.maxNotificationInterval=1000"
REDIS_PORT, SENTINEL_PORT = 6379, 26379
PG_PORT, PATRONI_PORT = 5432, 8008
SERVICE_PORT = 8080  # each replica, inside its own host
LB_ORDER_PORT, LB_STOCK_PORT, LB_PG_PORT = 8081, 8082, 5432
REDIS_MASTER = "inventory"  # the name the sentinels know the primary by
PATRONI_SCOPE = "invc"


@dataclass(frozen=True)
class Host:
    name: str
    role: str  # zookeeper | redis | postgres | stock | order | haproxy | intruder
    address: str

    @property
    def namespace(self) -> str:
        return f"{PREFIX}-{self.name}"


def _host(name: str, role: str, last_octet: int) -> Host:
    return Host(name, role, f"{SUBNET}.{last_octet}")


HOSTS: tuple[Host, ...] = (
    _host("zk1", "zookeeper", 11),
    _host("zk2", "zookeeper", 12),
    _host("zk3", "zookeeper", 13),
    _host("redis1", "redis", 20),
    _host("redis2", "redis", 21),
    _host("pg1", "postgres", 31),
    _host("pg2", "postgres", 32),
    _host("stock1", "stock", 41),
    _host("stock2", "stock", 42),
    _host("order1", "order", 51),
    _host("order2", "order", 52),
    _host("lb1", "haproxy", 60),
    _host("lb2", "haproxy", 61),
    _host("intruder", "intruder", 90),
)
VIP = f"{SUBNET}.100"  # the load balancers' shared address


def host(name: str) -> Host:
    return next(h for h in HOSTS if h.name == name)


def by_role(role: str) -> list[Host]:
    return [h for h in HOSTS if h.role == role]


ZK_HOSTS = ",".join(f"{h.address}:{ZK_PORT}" for h in by_role("zookeeper"))
# Sentinels run on the ZooKeeper hosts: three, none on a Redis host.
SENTINELS = by_role("zookeeper")
ORDER_URL = f"http://{VIP}:{LB_ORDER_PORT}"
STOCK_URL = f"http://{VIP}:{LB_STOCK_PORT}"

# The elected reconcilers: one on each order host (two or more, on different hosts).
RECONCILERS = {"rec1": "order1", "rec2": "order2"}
# The elected relays of the stock events (stock_service/ledger/relay.py): one on each stock host.
RELAYS = {"rel1": "stock1", "rel2": "stock2"}
# What a relay runs with besides the services' settings: an event is marked sent only once the
# Redis replica has it too, so a Sentinel failover loses none (the relay's docstring).
RELAY_SETTINGS = {"STOCK_EVENTS_MIN_REPLICAS": "1"}
# The elected deliverers of webhooks (stock_service/webhooks/deliverer.py): one on each stock
# host, beside the relays.
DELIVERERS = {"wh1": "stock1", "wh2": "stock2"}
# What a deliverer runs with besides the services' settings: retries within seconds, not
# minutes, and enough of them that a receiver down for a fault's hold (a few seconds; a
# PostgreSQL failover stops the deliverer too) is waited for rather than dead-lettered.
DELIVERER_SETTINGS = {
    "WEBHOOK_BACKOFF_SECONDS": "0.5",
    "WEBHOOK_MAX_BACKOFF_SECONDS": "4",
    "WEBHOOK_MAX_ATTEMPTS": "30",
    "WEBHOOK_TIMEOUT_SECONDS": "3",
    "WEBHOOK_WORKERS": "16",  # the run's one subscription may have 8 in flight
}
EVENTS_STREAM = "inventory:stock-events"  # STOCK_EVENTS_STREAM's default, which the cluster keeps

# What the replicas run with, besides the addresses. Shorter than the single-node defaults so
# a fault "past the session timeout" and the recovery after it fit in a run of minutes:
SERVICE_SETTINGS = {
    "ZK_SESSION_TIMEOUT": "4",  # a cut-off or paused holder loses its locks after 4 s
    "LOCK_TIMEOUT": "5",
    "STOCK_CALL_TIMEOUT": "4",
    "STOCK_CALL_BUDGET": "12",
    "CONFIRM_BACKOFF": "0.5,1,2",  # the article's 3,5,10 s polls, shortened
    "IDEMPOTENCY_WAIT": "10",
    # The reconcilers settle an order left PENDING once it is older than any request of it can
    # run (RECONCILE_OLDER_THAN unset: one request's budget from the settings above, 94.5 s:
    # two flag writes of 6 + 5 s, two rounds of calls of 12 + 4 s, the polls 3.5 + 4 x 4 s, a
    # void 12 + 4 s, 5 s for the databases), looking every 2 s.
    "RECONCILE_INTERVAL": "2",
    # The cluster's hosts are on a private subnet, and so is a receiver of its webhooks (the
    # chaos run's, inventory/chaos/webhooks/): subscribing to a private address is allowed.
    "WEBHOOK_ALLOW_PRIVATE": "true",
}
# Seconds after the load ends by which the cluster must settle every order: the last orders
# are taken once 94.5 s old, and a pass runs every 2 s.
SETTLE_BOUND = 120.0
