"""The impostor: a host holding a valid certificate of the cluster's CA, for its own address,
that stands in for the cluster's servers. Run on the intruder host (`python -m
inventory.chaos.intruder impostor`), it listens with that certificate on ZooKeeper's, Redis's,
the sentinels' and PostgreSQL's ports, and redirects, inside its own namespace only, what is
sent to the real servers' addresses to itself (nft dnat: as a hijacked address or route
would). Then it dials the real addresses with the cluster's own clients and their own TLS
settings: the product's kazoo options (stock replicas, reconcilers, relays), Patroni's kazoo as
its wrapper runs it, redis-py through shared/redis_client.py (Redis and the sentinels), libpq
with verify-full (the services, Patroni's replication). Each must refuse the handshake because
the certificate names another host: refused only when the client's error says the name does
not match (a chain check alone would have let it in; a timeout proves nothing).

One control first: a client that checks the chain and not the name must get in, or the
impostor's certificate was not a valid one of the CA and its refusals prove nothing.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import struct
import subprocess
import threading
from collections.abc import Callable
from dataclasses import asdict
from functools import partial
from pathlib import Path

import psycopg
from redis.backoff import NoBackoff
from redis.retry import Retry

from coordination.locks.zookeeper import ZooKeeperTLS
from inventory.chaos.intruder.attempt import Attempt, attempt
from inventory.cluster import tls, topology
from shared.redis_client import make_redis

SSL_REQUEST = 80877103  # PostgreSQL's SSLRequest code: answered "S", then TLS
PATRONI_WRAPPER = Path(__file__).parents[2] / "cluster" / "patroni_digest.py"
SERVERS = {
    "zookeeper": (topology.by_role("zookeeper"), topology.ZK_PORT),
    "redis": (topology.by_role("redis"), topology.REDIS_PORT),
    "sentinel": (topology.SENTINELS, topology.SENTINEL_PORT),
    "postgres": (topology.by_role("postgres"), topology.PG_PORT),
}


def wrong_name(exc: Exception) -> bool:
    """The client refused the certificate for its name (OpenSSL's words, libpq's)."""
    text = str(exc)
    return "mismatch" in text or "does not match host name" in text


def serve(
    cert: str, key: str, address: str, ports: list[int], postgres: int = topology.PG_PORT
) -> list[socket.socket]:
    """TLS listeners on `ports` presenting `cert`; `postgres` answers SSLRequest first."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listeners = []
    for port in ports:
        sock = socket.create_server((address, port), reuse_port=True)
        listeners.append(sock)
        pg = port == postgres
        threading.Thread(target=_accept, args=(sock, context, pg), daemon=True).start()
    return listeners


def _accept(sock: socket.socket, context: ssl.SSLContext, pg: bool) -> None:
    while True:
        try:
            conn, _ = sock.accept()
        except OSError:
            return
        threading.Thread(target=_handshake, args=(conn, context, pg), daemon=True).start()


def _handshake(conn: socket.socket, context: ssl.SSLContext, pg: bool) -> None:
    try:
        conn.settimeout(5)
        if pg:
            _length, code = struct.unpack("!ii", conn.recv(8))
            if code == SSL_REQUEST:
                conn.sendall(b"S")
        with context.wrap_socket(conn, server_side=True) as tls_conn:
            tls_conn.recv(1)  # a client that refused the name has closed by now
    except (OSError, struct.error):
        pass
    finally:
        conn.close()


def redirect(to: str) -> None:
    """Inside this namespace only: whatever is sent to a real server's address and port goes
    to the impostor's, same port."""
    rules = (
        "".join(
            f"ip daddr {h.address} tcp dport {port} dnat to {to}:{port}\n"
            for hosts, port in SERVERS.values()
            for h in hosts
        )
        + f"ip daddr {topology.VIP} tcp dport {topology.PG_PORT} dnat to {to}:{topology.PG_PORT}\n"
    )
    table = (
        f"table ip impostor {{\nchain out {{\ntype nat hook output priority -100;\n{rules}}}\n}}\n"
    )
    subprocess.run(["nft", "-f", "-"], input=table, text=True, check=True)


def unredirect() -> None:
    subprocess.run(["nft", "delete", "table", "ip", "impostor"], check=False)


def _kazoo(ca: str, address: str) -> object:
    """The product's ZooKeeper client (its kazoo options, coordination/locks/zookeeper/client.py),
    connecting the way kazoo's connection does: the handler with what the client holds."""
    from kazoo.client import KazooClient

    client = KazooClient(hosts=f"{address}:{topology.ZK_PORT}", **ZooKeeperTLS(ca).kazoo_options())
    return client.handler.create_connection(
        address=(address, topology.ZK_PORT),
        hostname=address,
        timeout=5,
        use_ssl=client.use_ssl,
        ca=client.ca,
        verify_certs=client.verify_certs,
        check_hostname=client.check_hostname,
    )


def _patroni_kazoo(ca: str, address: str) -> str:
    """Patroni's kazoo (the system's python3 and kazoo), as its wrapper runs it, with the
    settings of the cluster's Patroni configuration (pg_ha.py: use_ssl, verify, cacert)."""
    script = (
        "import importlib.util, socket, sys\n"
        f"spec = importlib.util.spec_from_file_location('w', {str(PATRONI_WRAPPER)!r})\n"
        "w = importlib.util.module_from_spec(spec); spec.loader.exec_module(w)\n"
        "w.check_host_names()\n"
        "from patroni.dcs.zookeeper import PatroniSequentialThreadingHandler as H\n"
        f"H(2).create_connection(address=({address!r}, {topology.ZK_PORT}), timeout=5,"
        f" use_ssl=True, ca={ca!r}, verify_certs=True)\n"
    )
    done = subprocess.run(["/usr/bin/python3", "-c", script], capture_output=True, text=True)
    if done.returncode != 0:
        raise ConnectionError(done.stderr.strip().splitlines()[-1])
    return "connected"


def _redis(ca: str, address: str, port: int, sentinel: bool) -> object:
    """The product's Redis client (shared/redis_client.py), rediss or rediss+sentinel: one
    connection as its pool makes it (redis-py's retries would take seconds to say the same)."""
    if not sentinel:
        pool = make_redis(f"rediss://u:x@{address}:{port}/0?ssl_ca_certs={ca}").connection_pool
    else:
        url = f"rediss+sentinel://u:x@{address}:{port}/{topology.REDIS_MASTER}?ssl_ca_certs={ca}"
        # The sentinel's own client, as make_redis built it (asking for the primary would hide
        # the handshake's error in redis-py's MasterNotFoundError).
        manager = make_redis(url).connection_pool.sentinel_manager  # type: ignore[attr-defined]
        pool = manager.sentinels[0].connection_pool
    connection = pool.make_connection()
    # One handshake is the finding: redis-py's retries would repeat it for seconds.
    connection.retry = Retry(NoBackoff(), 0)  # type: ignore[attr-defined]
    connection.connect()
    connection.disconnect()
    return "connected"


def _postgres(ca: str, address: str) -> object:
    conninfo = f"host={address} port={topology.PG_PORT} user=u password=x dbname=postgres "
    return psycopg.connect(conninfo + f"connect_timeout=5 {tls.libpq_params(ca)}")


def _chain_only(ca: str, address: str) -> str:
    context = ssl.create_default_context(cafile=ca)
    context.check_hostname = False
    sock = socket.create_connection((address, topology.ZK_PORT), timeout=5)
    with context.wrap_socket(sock) as conn:
        return f"chain accepted: {conn.getpeercert()['subjectAltName']}"  # type: ignore[index]


def _tries(ca: str) -> list[tuple[str, str, Callable[[], object]]]:
    """Every TLS link of the cluster, as (target, which server, the client's attempt)."""
    tries: list[tuple[str, str, Callable[[], object]]] = []
    for h in topology.by_role("zookeeper"):
        tries.append(
            ("zookeeper", f"{h.name} (the services' kazoo)", partial(_kazoo, ca, h.address))
        )
        tries.append(
            ("zookeeper", f"{h.name} (Patroni's kazoo)", partial(_patroni_kazoo, ca, h.address))
        )
    for h in topology.by_role("redis"):
        tries.append(("redis", h.name, partial(_redis, ca, h.address, topology.REDIS_PORT, False)))
    for h in topology.SENTINELS:
        sentinel = partial(_redis, ca, h.address, topology.SENTINEL_PORT, True)
        tries.append(("redis", f"the sentinel on {h.name}", sentinel))
    places = [(h.name, h.address) for h in topology.by_role("postgres")]
    for name, address in [*places, ("the shared address", topology.VIP)]:
        tries.append(("postgres", f"PostgreSQL at {name}", partial(_postgres, ca, address)))
    return tries


def impostor_attempts(ca: str, cert: str, key: str, me: str) -> list[Attempt]:
    listeners = serve(cert, key, me, sorted({port for _, port in SERVERS.values()}))
    redirect(me)
    try:
        zk1 = topology.by_role("zookeeper")[0].address
        control = attempt("impostor", "control", partial(_chain_only, ca, zk1), lambda e: False)
        valid = control.answer.startswith("done: chain accepted")
        found = []
        for target, where, action in _tries(ca):
            got = attempt(
                target, f"impostor ({me}'s certificate) stands in for {where}", action, wrong_name
            )
            if not valid:  # the certificate did not even pass the chain check
                got.refused, got.answer = False, f"proves nothing; control: {control.answer}"
            found.append(got)
        return found
    finally:
        unredirect()
        for sock in listeners:
            sock.close()


def main() -> None:
    env = os.environ
    found = impostor_attempts(
        env["INVENTORY_IMPOSTOR_CA"],
        env["INVENTORY_IMPOSTOR_CERT"],
        env["INVENTORY_IMPOSTOR_KEY"],
        topology.host("intruder").address,
    )
    print(json.dumps([asdict(a) for a in found]))
