"""PostgreSQL with no single copy: one Patroni on each database host (Debian's patroni 3.0),
the cluster's ZooKeeper ensemble as its store, synchronous replication, and the roles each
program logs in as.

- Synchronous mode: a commit returns once the synchronous standby has it, so a deduction the
  stock service saw committed survives the primary's death; Patroni promotes only that standby.
  Not strict: when the standby is gone the primary goes on alone (writes continue; one copy
  until the standby is back), rather than stopping every write while one host is down.
- Failsafe mode: with ZooKeeper's quorum lost, the primary stays primary as long as it reaches
  every other member's REST API, instead of demoting itself (a ZooKeeper outage would
  otherwise take the database down with it).
- ttl 4 s, loop 1 s, retry_timeout 1 s (TIMING): a dead primary's leader key goes with its
  ZooKeeper session (the ttl), and the standby is promoted about 5 s after the death (10-12 s
  with the ttl 10 / loop 2 / retry 4 used before). Patroni's rule loop_wait + 2 * retry_timeout
  <= ttl holds (1 + 2 <= 4). Debian's Patroni 3.0.2 takes these as they are (its validator asks for
  integers only); Patroni 3.2.0 and later raise ttl to at least 20 and retry_timeout to at least
  3 with a warning, which is why `cluster up` reads the values back (timing_applied).
- TLS (tls.py): every TCP connection encrypted, the server checked against the cluster's CA
  (`sslmode=verify-full`), a login without TLS refused (`hostssl`); ZooKeeper over TLS too.
- pg_hba: scram-sha-256 for every TCP login. The services' roles only from the load balancers
  (they reach PostgreSQL through haproxy), each only to its own database; the superuser only
  from the database hosts (Patroni, pg_rewind) and the operator's console (the bridge's own
  address, where `cluster up` and `inventory chaos` run); replication between the database
  hosts only; everything else rejected. On the host itself, the postgres OS user (peer).
"""

from __future__ import annotations

import json
import shutil
import urllib.request
from pathlib import Path
from typing import Any

import psycopg

from inventory.cluster import netns, tls, topology
from inventory.cluster.delay_proxy import PORT as PROXY_PORT
from inventory.cluster.secrets import Secrets
from inventory.cluster.topology import Host

PG_BIN = Path("/usr/lib/postgresql/15/bin")
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's patroni and its kazoo live there
WRAPPER = Path(__file__).with_name("patroni_digest.py")
OPERATOR = f"{netns.SUBNET}.1"  # the bridge's address: the root namespace, the operator
# role -> its database (the reconcilers read and settle orders; the relays publish the stock
# outbox; the deliverers push it to the webhooks' subscribers)
SERVICE_ROLES = {
    "orders": "orders",
    "stock": "stock",
    "reconciler": "orders",
    "relay": "stock",
    "deliverer": "stock",
}
OWNED = ("orders", "stock")
# With the links delayed (`cluster up --link-delay-ms`, delay_proxy.py): the latency bench's
# one-database peer logs in as its own role to its own database.
PEER_ROLE = "peer"
# Patroni's clock (see the module's docstring): how long a dead primary's leader key outlives
# it, how often each Patroni looks, and how long it retries the store before failsafe mode.
TIMING = {"ttl": 4, "loop_wait": 1, "retry_timeout": 1}


def require_patroni() -> None:
    missing = [p for p in ("/usr/bin/patroni", str(PG_BIN / "initdb")) if not Path(p).exists()]
    if missing:
        raise netns.NetworkError(
            f"missing {', '.join(missing)}: apt-get install patroni postgresql-15 "
            "python3-kazoo python3-psycopg2"
        )


def pg_hba(with_tls: bool, proxied: bool = False) -> list[str]:
    """`proxied`: a delaying proxy on each database host stands between the balancers and
    PostgreSQL, so the services' logins come from the database hosts' own addresses (the
    proxy's), and the latency bench's peer logs in too."""
    db_hosts = [h.address for h in topology.by_role("postgres")]
    balancers = [h.address for h in topology.by_role("haproxy")]
    roles = {**SERVICE_ROLES, PEER_ROLE: PEER_ROLE} if proxied else SERVICE_ROLES
    if proxied:
        balancers += db_hosts
    host = "hostssl" if with_tls else "host"  # hostssl: a login without TLS finds no line
    lines = ["local all postgres peer"]
    lines += [f"{host} all postgres {a}/32 scram-sha-256" for a in [*db_hosts, OPERATOR]]
    lines += [f"{host} replication replicator {a}/32 scram-sha-256" for a in db_hosts]
    lines += [f"{host} postgres rewind {a}/32 scram-sha-256" for a in db_hosts]
    for role, database in roles.items():
        lines += [f"{host} {database} {role} {a}/32 scram-sha-256" for a in balancers]
    # The operator migrates as each database's owner, through the load balancers' address
    # like the services (covered above), and reads as the superuser (covered above).
    lines.append("host all all 0.0.0.0/0 reject")
    return lines


def config(pg: Host, folder: Path, secrets: Secrets, proxied: bool = False) -> dict[str, Any]:
    with_tls = bool(secrets.tls_ca)
    # TLS (inventory/cluster/tls.py): the server's certificate and key in the host's folder;
    # Patroni's own connections to the other host (replication, rewind) check it too.
    local = {"unix_socket_directories": str(folder)}
    checked: dict[str, str] = {}
    zk_tls: dict[str, Any] = {}
    if with_tls:
        local |= {
            "ssl": "on",
            "ssl_cert_file": str(folder / tls.CERT),
            "ssl_key_file": str(folder / tls.KEY),
        }
        checked = {"sslmode": "verify-full", "sslrootcert": str(folder / tls.CA)}
        # ZooKeeper's secure port, the ensemble checked against the CA (its copy here too)
        zk_tls = {"use_ssl": True, "verify": True, "cacert": str(folder / tls.CA)}

    def login(role: str) -> dict[str, str]:
        return {"username": role, "password": secrets.pg[role], **checked}

    return {
        "scope": topology.PATRONI_SCOPE,
        "namespace": "/service/",
        "name": pg.name,
        "log": {"level": "INFO"},
        "restapi": {
            "listen": f"{pg.address}:{topology.PATRONI_PORT}",
            "connect_address": f"{pg.address}:{topology.PATRONI_PORT}",
            # Only the unsafe endpoints (switchover, restart, config) need it; GET /primary,
            # haproxy's check, stays open.
            "authentication": {"username": "patroni", "password": secrets.patroni_api},
        },
        "zookeeper": {
            "hosts": [f"{h.address}:{topology.ZK_PORT}" for h in topology.by_role("zookeeper")],
            **zk_tls,
        },
        "bootstrap": {
            "dcs": {
                **TIMING,
                "synchronous_mode": True,
                "failsafe_mode": True,
                "maximum_lag_on_failover": 0,
                "postgresql": {
                    "use_pg_rewind": True,
                    "use_slots": True,
                    "parameters": {
                        "max_connections": 300,
                        "wal_level": "replica",
                        "hot_standby": "on",
                        "wal_log_hints": "on",
                        "max_wal_senders": 10,
                        "max_replication_slots": 10,
                        "password_encryption": "scram-sha-256",
                        # An old primary rewinds from the last checkpoint before the fork, from
                        # its own WAL: a full chaos run found it recycled (pg_rewind: "could not
                        # open file .../pg_wal/...17", the fork in ...20) and the host never
                        # rejoined. 512 MB (32 segments) keeps minutes of this load.
                        "wal_keep_size": "512MB",
                    },
                },
            },
            "initdb": [{"encoding": "UTF8"}, "data-checksums", {"auth-local": "peer"}],
        },
        "postgresql": {
            "listen": f"{pg.address}:{topology.PG_PORT}",
            # Proxied: the standby's replication connects through the primary's proxy.
            "connect_address": f"{pg.address}:{PROXY_PORT if proxied else topology.PG_PORT}",
            "data_dir": str(folder / "data"),
            "bin_dir": str(PG_BIN),
            "pgpass": str(folder / "pgpass"),
            "use_unix_socket": True,
            # A new standby's copy starts at once, not at the next (spread) checkpoint.
            "basebackup": [{"checkpoint": "fast"}],
            "parameters": local,
            "authentication": {
                "superuser": login("postgres"),
                "replication": login("replicator"),
                "rewind": login("rewind"),
            },
            "pg_hba": pg_hba(with_tls, proxied),
            # When pg_rewind fails all the same, the host starts over from a copy of the
            # primary (a basebackup) instead of failing to start forever.
            "remove_data_directory_on_rewind_failure": True,
        },
    }


def patroni_argv(pg: Host, home: Path, secrets: Secrets, proxied: bool = False) -> list[str]:
    """The command that runs Patroni (and so PostgreSQL) on a database host, as the postgres
    user (its ZooKeeper identity comes in the environment: Secrets.env_for("patroni")). Its
    folder and config (passwords inside) are the postgres user's alone (0700, 0600)."""
    folder = home / pg.name
    folder.mkdir(parents=True, exist_ok=True)
    shutil.chown(folder, "postgres", "postgres")
    folder.chmod(0o700)
    path = folder / "patroni.yml"
    path.touch(mode=0o600)
    path.write_text(json.dumps(config(pg, folder, secrets, proxied), indent=2))  # JSON is YAML
    if secrets.tls_ca:
        tls.install_server_files(Path(secrets.tls_ca).parent.parent, folder)
    wrapper = folder / WRAPPER.name  # the checkout may be out of the postgres user's reach
    shutil.copyfile(WRAPPER, wrapper)
    for owned in (path, wrapper):
        shutil.chown(owned, "postgres", "postgres")
    return ["runuser", "-u", "postgres", "--", SYSTEM_PYTHON, str(wrapper), str(path)]


# --- what the operator asks of it --------------------------------------------------------------


def _rest(pg: Host, path: str, timeout: float = 1.0) -> tuple[int, Any]:
    url = f"http://{pg.address}:{topology.PATRONI_PORT}{path}"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as refused:
        return refused.code, None
    except (OSError, ValueError):
        return 0, None


def primary() -> Host | None:
    """The database host whose Patroni says it is the running primary (haproxy asks the same
    question, GET /primary, to route)."""
    for pg in topology.by_role("postgres"):
        if _rest(pg, "/primary")[0] == 200:
            return pg
    return None


def timing_applied() -> bool:
    """Patroni runs with TIMING as written: a later Patroni would have raised them (3.2.0 and
    on: ttl >= 20, retry_timeout >= 3) and failovers would take five times as long, silently."""
    for pg in topology.by_role("postgres"):
        status, body = _rest(pg, "/config")
        if status == 200 and body:
            return all(body.get(k) == v for k, v in TIMING.items())
    return False


def members() -> dict[str, dict[str, Any]]:
    """Patroni's view of the cluster: name -> role and state (`leader`, `sync_standby`...)."""
    for pg in topology.by_role("postgres"):
        status, body = _rest(pg, "/cluster")
        if status == 200 and body:
            return {m["name"]: m for m in body.get("members", [])}
    return {}


def replicated() -> bool:
    """A running primary and a synchronous standby streaming from it."""
    roles = {m.get("role"): m.get("state") for m in members().values()}
    return roles.get("leader") == "running" and roles.get("sync_standby") in (
        "running",
        "streaming",
    )


def libpq(database: str, secrets: Secrets) -> str:
    """The operator's connection: the superuser, straight to the primary (from the bridge's
    address, the one place besides the database hosts it may log in from)."""
    pg = primary()
    if pg is None:
        raise psycopg.OperationalError("no PostgreSQL primary (Patroni names none)")
    return (
        f"host={pg.address} port={topology.PG_PORT} user=postgres dbname={database} "
        f"password={secrets.pg['postgres']} connect_timeout=3 {tls.libpq_params(secrets.tls_ca)}"
    ).strip()


def operator_url(database: str, secrets: Secrets) -> str:
    """The same, as an SQLAlchemy URL (the chaos checker reads both databases with it)."""
    pg = primary()
    address = pg.address if pg else topology.host("pg1").address
    return (
        f"postgresql+psycopg://postgres:{secrets.pg['postgres']}@{address}:"
        f"{topology.PG_PORT}/{database}{tls.url_query(secrets.tls_ca)}"
    )


def reachable_as(role: str, database: str, secrets: Secrets) -> bool:
    """A login as a service role through the load balancers' address works (haproxy has
    found the primary)."""
    url = secrets.database_url(role, database).replace("postgresql+psycopg", "postgresql")
    try:
        with psycopg.connect(url, connect_timeout=2) as conn:
            conn.execute("SELECT 1")
        return True
    except psycopg.Error:
        return False
