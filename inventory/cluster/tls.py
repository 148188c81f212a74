"""TLS between hosts for PostgreSQL and Redis: a certificate authority of the cluster's own and
server certificates for the database hosts and for Redis and its sentinels, made with openssl
at `cluster up`.

What it protects: the services' and the reconcilers' logins and queries (through haproxy,
which passes TLS through in TCP mode), replication and pg_rewind between the database hosts,
and the operator's console. The server certificate names both database hosts and the shared
address by IP (subjectAltName), so every client checks it with `sslmode=verify-full` against
the cluster's CA: a host that took the shared address over, or a stranger answering in a
database host's place, cannot present it. pg_hba's `hostssl` lines refuse a login without TLS.

Redis (redis_ha.py): the servers and the sentinels listen with TLS only (`port 0`,
`tls-port`), replicate and talk to each other over TLS, and every client (the services through
Sentinel, `rediss+sentinel://`, the operator's checks) verifies the certificate against the
CA and the address it dialled.

Names, not just the chain: every client checks that the certificate names the address it
dialled (libpq's verify-full, redis-py's ssl_check_hostname, kazoo's check_hostname, Patroni's
kazoo through patroni_digest.py). A chain check alone would let any host holding a certificate
of this CA stand in for any server. So each certificate names only the hosts of its role, as
they are reached: the Redis nodes theirs, the sentinels theirs (on the ZooKeeper hosts, a
certificate apart: the Redis nodes' must not name the ensemble's addresses), the ensemble its
members', the database hosts theirs and the shared address. A host of one role cannot pass for
another's (the chaos run's impostor tries, inventory/chaos/intruder/impostor.py); the members
of one role share theirs, and can pass for each other.

ZooKeeper (zookeeper_server_lines): a secure client port only (Netty), the plain one closed, and
quorum TLS between the members (each presents the ensemble's certificate to the others and
checks theirs against the CA); clients are asked no certificate (they log in with their digest
identity) and check the ensemble's against the CA (kazoo's use_ssl): the services, the
reconcilers, Patroni, the operator's tools.
"""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
from pathlib import Path

from inventory.cluster import topology

FOLDER = "tls"
CA = "ca.crt"
CERT, KEY = "server.crt", "server.key"
DAYS = "30"  # a cluster of a session; a deployment renews from its own CA
EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
REDIS_STEM = "redis"
SENTINEL_STEM = "sentinel"
ZK_STEM = "zookeeper"
ZK_KEYSTORE = "zookeeper.pem"  # the key (PKCS#8) and the certificate in one file
# What the Netty connection factory needs besides what zookeeper.jar's manifest lists
# (Debian's 3.8.0 names netty-handler and -transport, not -codec: NoClassDefFoundError).
ZK_NETTY_JARS = [
    Path("/usr/share/java/netty-codec.jar"),
    Path("/usr/share/java/netty-resolver.jar"),
]


def _openssl(*args: str, cwd: Path) -> None:
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {args[0]}: {done.stderr.strip()[-300:]}")


def make_ca(home: Path) -> Path:
    """The cluster's CA (once per cluster): its key never leaves the folder (0600); its
    certificate is what clients trust. Returns the folder."""
    folder = home / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)  # the CA certificate is public; the keys are 0600 below
    if not (folder / CA).exists():
        _openssl(
            "req", "-x509", *EC, "-keyout", "ca.key", "-out", CA, "-days", DAYS,
            "-subj", "/CN=inventory cluster CA", cwd=folder,
        )  # fmt: skip
        (folder / "ca.key").chmod(0o600)
        (folder / CA).chmod(0o644)
    return folder


def make_server(home: Path, stem: str, names: list[str], usage: str = "serverAuth") -> Path:
    """A server certificate `<stem>.crt` and key `<stem>.key` signed by the cluster's CA, for
    `names` (IP addresses, as subjectAltName). Returns the folder."""
    folder = make_ca(home)
    key, cert = f"{stem}.key", f"{stem}.crt"
    _openssl(
        "req", *EC, "-keyout", key, "-out", f"{stem}.csr", "-subj", f"/CN=inventory {stem}",
        cwd=folder,
    )  # fmt: skip
    (folder / f"{stem}.ext").write_text(
        "subjectAltName=" + ",".join(f"IP:{n}" for n in names) + f"\nextendedKeyUsage={usage}\n"
    )
    _openssl(
        "x509", "-req", "-in", f"{stem}.csr", "-CA", CA, "-CAkey", "ca.key", "-CAcreateserial",
        "-out", cert, "-days", DAYS, "-extfile", f"{stem}.ext", cwd=folder,
    )  # fmt: skip
    (folder / key).chmod(0o600)
    return folder


def make(home: Path, names: list[str]) -> Path:
    """The CA and the PostgreSQL server certificate (server.crt, server.key) for `names`."""
    return make_server(home, "server", names)


def make_for_postgres(home: Path) -> Path:
    """The database hosts' certificate: their own addresses and the shared one."""
    names = [h.address for h in topology.by_role("postgres")] + [topology.VIP]
    return make(home, names)


def make_for_redis(home: Path) -> Path:
    """The Redis nodes' certificate (redis.crt, redis.key), naming the Redis hosts only, and
    the sentinels' (sentinel.crt, sentinel.key), naming the sentinels' hosts only: a Redis host
    holds no certificate for the ZooKeeper hosts' addresses, where the sentinels run."""
    make_server(home, REDIS_STEM, [h.address for h in topology.by_role("redis")])
    return make_server(home, SENTINEL_STEM, [h.address for h in topology.SENTINELS])


def make_for_zookeeper(home: Path) -> Path:
    """The ensemble's certificate, for the ZooKeeper hosts' addresses, good for both ends of a
    TLS link (the members connect to each other: quorum TLS), and ZooKeeper's PEM keystore
    made of it: the key in PKCS#8 (ZooKeeper reads no other form) followed by the certificate."""
    names = [h.address for h in topology.by_role("zookeeper")]
    folder = make_server(home, ZK_STEM, names, usage="serverAuth,clientAuth")
    pkcs8 = subprocess.run(
        ["openssl", "pkcs8", "-topk8", "-nocrypt", "-in", f"{ZK_STEM}.key"],
        cwd=folder, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    keystore = folder / ZK_KEYSTORE
    keystore.touch(mode=0o600)
    keystore.write_text(pkcs8 + (folder / f"{ZK_STEM}.crt").read_text())
    return folder


def zookeeper_server_lines(ca: str, port: int) -> str:
    """A member's TLS settings (zoo.cfg; ZooKeeper 3.8 reads PEM key and trust stores): the
    Netty connection factory (the only one that speaks TLS), TLS on the client port and no
    plain one, clients not asked for a certificate (they log in with their digest identity),
    and quorum TLS: the members' own links (proposals, elections) encrypted and each member
    checked against the CA."""
    folder = Path(ca).parent
    stores = (
        f"keyStore.location={folder / ZK_KEYSTORE}\nkeyStore.type=PEM\n"
        f"trustStore.location={ca}\ntrustStore.type=PEM\n"
    )
    return (
        "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n"
        f"secureClientPort={port}\n"
        + "".join(f"ssl.{line}\n" for line in stores.splitlines())
        + "ssl.clientAuth=none\n"
        + "sslQuorum=true\n"
        + "".join(f"ssl.quorum.{line}\n" for line in stores.splitlines())
    )


def kazoo_kwargs(ca: str) -> dict[str, object]:
    """What a kazoo client adds: TLS, the ensemble checked against the CA and the address
    dialled ({} without). kazoo checks no name unless told (check_hostname is off by default)."""
    return {"use_ssl": True, "verify_certs": True, "check_hostname": True, "ca": ca} if ca else {}


def zk_context(ca: str) -> ssl.SSLContext:
    """For the four-letter words (`srvr`), which the secure port answers over TLS too."""
    return ssl.create_default_context(cafile=ca)


def cluster_ca() -> str:
    """The running cluster's CA certificate ("" when there is none): what the operator's own
    ZooKeeper clients (status, the chaos run) check the ensemble against."""
    home = Path(os.environ.get("INVENTORY_CLUSTER_HOME", "/tmp/invc-cluster")).resolve()
    ca = home / FOLDER / CA
    return str(ca) if ca.is_file() else ""


def redis_server_lines(ca: str, port: int, stem: str = REDIS_STEM) -> str:
    """Redis's or a sentinel's TLS settings (`stem`: whose certificate, REDIS_STEM or
    SENTINEL_STEM): TLS only (the plain port off), clients not asked for a certificate (they
    log in with their ACL user), replication and the sentinels' links over TLS too. Redis's
    own outgoing links (a replica to its primary, a sentinel to the nodes and to the other
    sentinels) check the chain against the CA but no name: Redis 7.0 has no setting for it."""
    folder = Path(ca).parent
    return (
        f"port 0\ntls-port {port}\n"
        f"tls-cert-file {folder / (stem + '.crt')}\n"
        f"tls-key-file {folder / (stem + '.key')}\n"
        f"tls-ca-cert-file {ca}\n"
        "tls-auth-clients no\ntls-replication yes\n"
    )


def redis_client_kwargs(ca: str) -> dict[str, object]:
    """What a redis-py client adds: TLS, the server checked against the CA and the address
    dialled ({} without TLS; said rather than left to redis-py's default)."""
    if not ca:
        return {}
    return {
        "ssl": True,
        "ssl_ca_certs": ca,
        "ssl_cert_reqs": "required",
        "ssl_check_hostname": True,
    }


def install_server_files(home: Path, into: Path) -> None:
    """A copy of the certificate, its key and the CA in a database host's folder, the
    postgres user's alone (PostgreSQL refuses a key others can read; Patroni checks the other
    host against the CA when it replicates or rewinds)."""
    for name in (CERT, KEY, CA):
        copy = into / name
        shutil.copyfile(home / FOLDER / name, copy)
        shutil.chown(copy, "postgres", "postgres")
        copy.chmod(0o600)


def libpq_params(ca: str) -> str:
    """What every client adds to its connection: TLS, and the server checked against the CA
    and its address ("" without TLS)."""
    return f"sslmode=verify-full sslrootcert={ca}" if ca else ""


def url_query(ca: str) -> str:
    return f"?sslmode=verify-full&sslrootcert={ca}" if ca else ""
