"""The cluster's identities: one for each service and for the reconcilers in ZooKeeper, Redis and
PostgreSQL, made at `cluster up`, kept in one file readable by root alone (0600), shown by
`cluster status` only as its path, never logged.

Who may do what (least privilege):
- ZooKeeper (digest ACLs, inventory/cluster/zk_acl.py): the stock service creates and deletes
  lock nodes under /inventory/locks, the reconcilers election nodes under /inventory/reconciler,
  the relays theirs under /inventory/relay, the deliverers of webhooks theirs under
  /inventory/webhooks, Patroni its keys under /service; everyone else may
  only read.
- Redis (ACL users, inventory/cluster/redis_ha.py): the order service sets and deletes flags; the
  reconcilers set them (an undecided order's flag written again before its deduction is retried,
  so an unknown outcome loses no sale); the stock service reads and deletes them, runs its lock
  scripts and fault keys; the relays add to the stock events' stream (XADD) and wait for the
  replica (WAIT); a consumer of the events (`events`: the chaos run's) reads the stream in a
  consumer group; the sentinels and the replica have what failover and replication need; the
  default user is off, and no one has a @dangerous command.
- PostgreSQL (scram-sha-256, inventory/cluster/pg_ha.py): a role per service owning only its
  database; the reconcilers read orders and move their status; the relays read the stock
  outbox and mark its rows sent, nothing else; the deliverers of webhooks read the outbox and
  the subscriptions, and write the deliveries; the superuser only through the database hosts'
  own socket.
- The services' admin routes: the admin token, as on a single machine. The stock service's
  own routes (reduceStock, voidFlag, returnStock, stockFlow): a token the order service and
  the reconcilers send, so a host that reaches the port can neither deduct nor return stock.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import quote

from inventory.cluster import tls, topology

FILE = "secrets.json"
ZK_IDENTITIES = ("admin", "stock", "reconciler", "relay", "deliverer", "patroni")
REDIS_USERS = ("order", "stock", "reconciler", "relay", "events", "sentinel", "replica", "monitor")
PG_ROLES = (
    "postgres",
    "replicator",
    "rewind",
    "orders",
    "stock",
    "reconciler",
    "relay",
    "deliverer",
)


def _new() -> str:
    return secrets.token_urlsafe(18)


@dataclass
class Secrets:
    zk: dict[str, str] = field(default_factory=lambda: {n: _new() for n in ZK_IDENTITIES})
    redis: dict[str, str] = field(default_factory=lambda: {n: _new() for n in REDIS_USERS})
    sentinel_password: str = field(default_factory=_new)
    pg: dict[str, str] = field(default_factory=lambda: {n: _new() for n in PG_ROLES})
    patroni_api: str = field(default_factory=_new)
    # The services' admin routes: the environment's ADMIN_TOKEN, or one made for this cluster.
    admin_token: str = field(default_factory=lambda: os.environ.get("ADMIN_TOKEN") or _new())
    # What the order service and the reconcilers show the stock service (its own routes).
    stock_service_token: str = field(default_factory=_new)
    # Not a secret: where the cluster's CA certificate is, which every PostgreSQL and Redis
    # client checks the server against (inventory/cluster/tls.py); "" is without TLS.
    tls_ca: str = ""

    # --- where they live ---------------------------------------------------------------------

    def save(self, home: Path) -> Path:
        path = home / FILE
        path.touch(mode=0o600)
        path.chmod(0o600)
        path.write_text(json.dumps(asdict(self), indent=2))
        return path

    @classmethod
    def load(cls, home: Path) -> Secrets:
        return cls(**json.loads((home / FILE).read_text()))

    # --- what each holder is given -----------------------------------------------------------

    def zk_auth(self, identity: str) -> str:
        return f"{identity}:{self.zk[identity]}"

    def zk_tls(self) -> dict[str, str]:
        """ZooKeeper over TLS, the ensemble checked against the cluster's CA (its secure port
        is the only one; no client certificate: the digest identity is the login)."""
        return {"ZK_CA_FILE": self.tls_ca} if self.tls_ca else {}

    def redis_url(self, user: str) -> str:
        sentinels = ",".join(f"{h.address}:{topology.SENTINEL_PORT}" for h in topology.SENTINELS)
        # With TLS (tls.py): rediss, the sentinels and Redis checked against the cluster's CA.
        scheme, ca = (
            ("rediss", f"&ssl_ca_certs={quote(self.tls_ca)}") if self.tls_ca else ("redis", "")
        )
        return (
            f"{scheme}+sentinel://{user}:{quote(self.redis[user])}@{sentinels}/"
            f"{topology.REDIS_MASTER}/0?sentinel_password={quote(self.sentinel_password)}{ca}"
        )

    def database_url(self, role: str, database: str) -> str:
        """Through the load balancers' address, which forwards to the Patroni primary."""
        return (
            f"postgresql+psycopg://{role}:{quote(self.pg[role])}@{topology.VIP}:"
            f"{topology.LB_PG_PORT}/{database}{tls.url_query(self.tls_ca)}"
        )

    def env_for(self, role: str) -> dict[str, str]:
        """The credentials of one kind of program, as environment variables: a stock replica,
        an order replica, a reconciler, a Patroni. Each gets only its own."""
        if role == "patroni":
            return {"INVENTORY_PATRONI_ZK_AUTH": self.zk_auth("patroni")}
        if role == "stock":
            return {
                "ADMIN_TOKEN": self.admin_token,  # its admin routes (PUT /stock)
                "STOCK_SERVICE_TOKEN": self.stock_service_token,
                "ZK_AUTH": self.zk_auth("stock"),
                **self.zk_tls(),
                "REDIS_URL": self.redis_url("stock"),
                "STOCK_DATABASE_URL": self.database_url("stock", "stock"),
            }
        if role == "order":
            return {
                "ADMIN_TOKEN": self.admin_token,  # its admin routes (PUT /buyer-limits)
                "STOCK_SERVICE_TOKEN": self.stock_service_token,
                "REDIS_URL": self.redis_url("order"),
                "ORDER_DATABASE_URL": self.database_url("orders", "orders"),
            }
        if role == "reconciler":
            return {
                "STOCK_SERVICE_TOKEN": self.stock_service_token,
                "ZK_AUTH": self.zk_auth("reconciler"),
                **self.zk_tls(),
                # It writes an undecided order's flag again before it retries the deduction;
                # without its own URL it looked for Redis on localhost and never could.
                "REDIS_URL": self.redis_url("reconciler"),
                "ORDER_DATABASE_URL": self.database_url("reconciler", "orders"),
            }
        if role == "relay":
            return {
                "ZK_AUTH": self.zk_auth("relay"),  # its election's nodes
                **self.zk_tls(),
                "REDIS_URL": self.redis_url("relay"),  # XADD to the stream, WAIT
                "STOCK_DATABASE_URL": self.database_url("relay", "stock"),  # the outbox only
            }
        if role == "deliverer":  # no Redis: it reads the outbox, not the stream
            return {
                "ZK_AUTH": self.zk_auth("deliverer"),  # its election's nodes
                **self.zk_tls(),
                "STOCK_DATABASE_URL": self.database_url("deliverer", "stock"),
            }
        raise ValueError(f"no identities for {role!r}")
