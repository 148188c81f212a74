"""`inventory bench --auth`, ZooKeeper's TLS rows: one ZooKeeper of the bench's own that listens
on a plain client port and on a TLS one at once (the cluster's TLS settings, tls.py), and the
same operations over each: a session opened and closed, and a lock node created and deleted on
a kept session. The client checks the server's certificate against the CA, as the cluster's
clients do (kazoo's use_ssl, verify_certs; tls.kazoo_kwargs)."""

from __future__ import annotations

import contextlib
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from kazoo.client import KazooClient

from inventory.bench.auth_pair import Pair, measure_pair
from inventory.bench.limits import quiet_kazoo
from inventory.cluster import tls
from inventory.local.servers import free_port, start_server, zk_ready, zookeeper_argv


def zookeeper_keystore(home: Path, names: list[str]) -> str:
    """The CA, a certificate for `names` and ZooKeeper's PEM keystore made of it (the key in
    PKCS#8, then the certificate), as tls.make_for_zookeeper makes the ensemble's, which names
    the cluster's hosts where this one names loopback. Returns the CA's path."""
    folder = tls.make_server(home, tls.ZK_STEM, names, usage="serverAuth,clientAuth")
    pkcs8 = subprocess.run(
        ["openssl", "pkcs8", "-topk8", "-nocrypt", "-in", f"{tls.ZK_STEM}.key"],
        cwd=folder, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    keystore = folder / tls.ZK_KEYSTORE
    keystore.touch(mode=0o600)
    keystore.write_text(pkcs8 + (folder / f"{tls.ZK_STEM}.crt").read_text())
    return str(folder / tls.CA)


@contextlib.contextmanager
def own_zookeeper_tls(folder: Path) -> Iterator[tuple[str, str, str]]:
    """A standalone ZooKeeper with both ports: (plain hosts, TLS hosts, the CA's path).

    One server, both ports: a standalone ZooKeeper (3.5 and later) opens a connection factory
    for `clientPort` and another for `secureClientPort`, both of the Netty class the TLS one
    needs. So the plain side of these rows runs on Netty too, where the digest rows' ZooKeeper
    runs on the default NIO factory: the pair compares TLS with no TLS on one server, one
    factory. Quorum TLS (sslQuorum) is in the lines but idle: no members."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "data").mkdir(exist_ok=True)
    ca = zookeeper_keystore(folder, ["127.0.0.1"])
    plain_port, tls_port = free_port(), free_port()
    config = folder / "zoo.cfg"
    config.write_text(
        "tickTime=500\ninitLimit=10\nsyncLimit=5\n"
        "minSessionTimeout=1000\nmaxSessionTimeout=60000\n"
        f"dataDir={folder / 'data'}\n"
        f"clientPort={plain_port}\nclientPortAddress=127.0.0.1\n"
        f"secureClientPortAddress=127.0.0.1\n{tls.zookeeper_server_lines(ca, tls_port)}"
        "maxClientCnxns=0\nadmin.enableServer=false\n"
        "4lw.commands.whitelist=ruok,srvr,stat,mntr\n"
        "forceSync=no\n"  # as the digest rows' ZooKeeper: the rows compare the wire, not disks
    )
    argv = zookeeper_argv(folder, config)
    # Debian's zookeeper.jar lists netty's handler but not its codec (as nodes.zookeeper adds).
    classpath = argv.index("-cp") + 1
    argv[classpath] += ":" + ":".join(str(j) for j in tls.ZK_NETTY_JARS)
    server = start_server(
        "zookeeper-tls", argv, plain_port, folder, lambda: zk_ready(plain_port), 60
    )
    try:
        yield f"127.0.0.1:{plain_port}", f"127.0.0.1:{tls_port}", ca
    finally:
        server.stop()


def zookeeper_tls_pairs(folder: Path, seconds: float, warm_up: float = 3.0) -> list[Pair]:
    quiet_kazoo()
    with own_zookeeper_tls(folder) as (plain_hosts, tls_hosts, ca):
        secure = tls.kazoo_kwargs(ca)

        def client(hosts: str, extra: dict[str, object]) -> KazooClient:
            return KazooClient(hosts=hosts, **extra)

        def session(hosts: str, extra: dict[str, object]) -> Callable[[], None]:
            def run() -> None:
                one = client(hosts, extra)
                one.start(timeout=10)
                one.stop()
                one.close()

            return run

        kept = {"plain": client(plain_hosts, {}), "tls": client(tls_hosts, secure)}
        for one in kept.values():
            one.start(timeout=10)
        root = f"/bench-tls-{uuid.uuid4().hex[:6]}"
        kept["plain"].ensure_path(f"{root}/locks")

        def cycle(one: KazooClient) -> Callable[[], None]:
            return lambda: one.delete(one.create(f"{root}/locks/n-", ephemeral=True, sequence=True))

        try:
            # ZooKeeper's JVM compiles its hot paths (Netty's and the TLS engine's here) in its
            # first seconds: warm both sides up before the first round counts.
            deadline = time.monotonic() + warm_up
            while time.monotonic() < deadline:
                cycle(kept["plain"])(), cycle(kept["tls"])()
            return [
                measure_pair(
                    "ZooKeeper TLS",
                    "session opened and closed (plain vs TLS, server checked against the CA)",
                    session(plain_hosts, {}),
                    session(tls_hosts, secure),
                    seconds,
                ),
                measure_pair(
                    "ZooKeeper TLS",
                    "lock node created and deleted on a kept session (plain vs TLS)",
                    cycle(kept["plain"]),
                    cycle(kept["tls"]),
                    seconds,
                ),
            ]
        finally:
            for one in kept.values():
                one.stop()
                one.close()
