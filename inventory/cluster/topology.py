"""Which hosts the cluster has, their addresses and ports, and the settings its services run
with.

Why haproxy in front of each service rather than a list of URLs with failover in the order
service: the services stay unaware of how many replicas there are; haproxy's health checks take
a replica out within a second of its /healthz failing (a stock replica cut off from ZooKeeper
says so), and it retries a request only when the connection to a replica failed, i.e. when
nothing was sent, which is the one retry that is always safe for a POST. The cost is one more
hop and one process that is not replicated here (a real deployment runs two with a shared
address); the nemesis never faults it, and the report says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from inventory.cluster.netns import PREFIX, SUBNET

ZK_PORT, ZK_PEER_PORT, ZK_ELECTION_PORT = 2181, 2888, 3888
REDIS_PORT = 6379
PG_PORT = 5432
SERVICE_PORT = 8080  # each replica, inside its own host
LB_ORDER_PORT, LB_STOCK_PORT = 8081, 8082


@dataclass(frozen=True)
class Host:
    name: str
    role: str  # zookeeper | redis | postgres | stock | order | haproxy
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
    _host("redis", "redis", 20),
    _host("pg", "postgres", 30),
    _host("stock1", "stock", 41),
    _host("stock2", "stock", 42),
    _host("order1", "order", 51),
    _host("order2", "order", 52),
    _host("lb", "haproxy", 60),
)


def host(name: str) -> Host:
    return next(h for h in HOSTS if h.name == name)


def by_role(role: str) -> list[Host]:
    return [h for h in HOSTS if h.role == role]


ZK_HOSTS = ",".join(f"{h.address}:{ZK_PORT}" for h in by_role("zookeeper"))
REDIS_URL = f"redis://{host('redis').address}:{REDIS_PORT}/0"
PG_URL = f"postgresql+psycopg://postgres@{host('pg').address}:{PG_PORT}"
ORDER_DATABASE_URL = f"{PG_URL}/orders"
STOCK_DATABASE_URL = f"{PG_URL}/stock"
ORDER_URL = f"http://{host('lb').address}:{LB_ORDER_PORT}"
STOCK_URL = f"http://{host('lb').address}:{LB_STOCK_PORT}"

# What the replicas run with, besides the addresses. Shorter than the single-node defaults so
# a fault "past the session timeout" and the recovery after it fit in a run of minutes:
SERVICE_SETTINGS = {
    "ZK_SESSION_TIMEOUT": "4",  # a cut-off or paused holder loses its locks after 4 s
    "LOCK_TIMEOUT": "5",
    "STOCK_CALL_TIMEOUT": "4",
    "STOCK_CALL_BUDGET": "12",
    "CONFIRM_BACKOFF": "0.5,1,2",  # the article's 3,5,10 s polls, shortened
    "IDEMPOTENCY_WAIT": "10",
    # Orders PENDING after a fault are settled by the reconciler once their flag has expired
    # (see order_service/reconcile.py); a short TTL keeps that wait short.
    "FLAG_TTL": "30",
}
