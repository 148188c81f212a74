"""TLS that checks whom it talks to: every client of the cluster checks that the server's
certificate names the address it dialled, and each certificate names only its own role's hosts.
The clients are tried against a server on this machine whose certificate, signed by the same
CA, names another address: the product's kazoo options, Patroni's kazoo as its wrapper runs it
(the system's python3 and kazoo 2.8), redis-py through shared/redis_client.py, libpq."""

from __future__ import annotations

import socket
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import redis

from coordination.locks.zookeeper import ZooKeeperTLS
from inventory.chaos.intruder import impostor
from inventory.cluster import tls, topology
from inventory.cluster.secrets import Secrets
from shared.redis_client import make_redis

HERE = "127.0.0.1"


def test_every_client_setting_checks_the_name() -> None:
    assert tls.kazoo_kwargs("/ca.crt")["check_hostname"] is True
    assert ZooKeeperTLS("/ca.crt").kazoo_options()["check_hostname"] is True
    assert tls.redis_client_kwargs("/ca.crt")["ssl_check_hostname"] is True
    assert "sslmode=verify-full" in tls.libpq_params("/ca.crt")
    secrets = Secrets()
    secrets.tls_ca = "/ca.crt"
    assert "sslmode=verify-full" in secrets.database_url("orders", "stock")
    pool = make_redis(secrets.redis_url("order")).connection_pool
    assert pool.make_connection().check_hostname is True  # type: ignore[attr-defined]
    for sentinel in pool.sentinel_manager.sentinels:  # type: ignore[attr-defined]
        assert sentinel.connection_pool.make_connection().check_hostname is True


def names(cert: Path) -> set[str]:
    out = subprocess.run(
        ["openssl", "x509", "-in", str(cert), "-noout", "-ext", "subjectAltName"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {n.strip().removeprefix("IP Address:") for n in out.splitlines()[1].split(",")}


def test_each_certificate_names_its_own_hosts_only(tmp_path: Path) -> None:
    tls.make_for_postgres(tmp_path)
    tls.make_for_redis(tmp_path)
    tls.make_for_zookeeper(tmp_path)
    folder = tmp_path / tls.FOLDER
    zk = {h.address for h in topology.by_role("zookeeper")}
    assert names(folder / "zookeeper.crt") == zk
    assert names(folder / "sentinel.crt") == {h.address for h in topology.SENTINELS}
    assert names(folder / "redis.crt") == {h.address for h in topology.by_role("redis")}
    pg = {h.address for h in topology.by_role("postgres")}
    assert names(folder / tls.CERT) == pg | {topology.VIP}
    # A Redis or database host holds nothing that names a ZooKeeper member.
    assert not zk & (names(folder / "redis.crt") | names(folder / tls.CERT))


@pytest.fixture(scope="module")
def wrong_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int, int]]:
    """TLS on 127.0.0.1 with a certificate of the same CA that names 127.0.0.2: one port as
    ZooKeeper's or Redis's, one as PostgreSQL's (SSLRequest first). Yields the CA, the ports."""
    folder = tls.make_server(tmp_path_factory.mktemp("tls"), "wrong", ["127.0.0.2"])
    port, pg_port = _free_port(), _free_port()
    cert, key = str(folder / "wrong.crt"), str(folder / "wrong.key")
    listeners = impostor.serve(cert, key, HERE, [port, pg_port], postgres=pg_port)
    yield str(folder / tls.CA), port, pg_port
    for sock in listeners:
        sock.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HERE, 0))
        return int(s.getsockname()[1])


def test_the_products_kazoo_refuses_the_wrong_name(wrong_server: tuple[str, int, int]) -> None:
    from kazoo.handlers.utils import create_tcp_connection

    ca, port, _ = wrong_server
    options = {k: v for k, v in ZooKeeperTLS(ca).kazoo_options().items() if v is not None}
    with pytest.raises(ssl.SSLCertVerificationError, match="mismatch"):
        create_tcp_connection(socket, (HERE, port), hostname=HERE, timeout=5, **options)
    chain_only = {**options, "check_hostname": False}  # what it did before: it got in
    create_tcp_connection(socket, (HERE, port), hostname=HERE, timeout=5, **chain_only).close()


PATRONI = f"""
import importlib.util, socket, sys
spec = importlib.util.spec_from_file_location("w", {str(impostor.PATRONI_WRAPPER)!r})
w = importlib.util.module_from_spec(spec); spec.loader.exec_module(w)
from kazoo.handlers.threading import SequentialThreadingHandler as H
def dial():
    return H().create_connection(address=("{HERE}", int(sys.argv[1])), timeout=5,
                                 use_ssl=True, ca=sys.argv[2], verify_certs=True)
dial().close()  # Debian's kazoo as it is: the chain only, the impostor gets in
w.check_host_names()
try:
    dial()
except Exception as exc:
    print(exc)
"""


def test_patronis_kazoo_refuses_the_wrong_name(wrong_server: tuple[str, int, int]) -> None:
    if subprocess.run(["/usr/bin/python3", "-c", "import kazoo"], check=False).returncode:
        pytest.skip("no system python3 with kazoo (Debian's python3-kazoo)")
    ca, port, _ = wrong_server
    done = subprocess.run(
        ["/usr/bin/python3", "-c", PATRONI, str(port), ca], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "mismatch" in done.stdout


def test_redis_clients_refuse_the_wrong_name(wrong_server: tuple[str, int, int]) -> None:
    ca, port, _ = wrong_server
    with pytest.raises(redis.ConnectionError, match="mismatch"):
        make_redis(f"rediss://u:x@{HERE}:{port}/0?ssl_ca_certs={ca}").ping()
    url = f"rediss+sentinel://u:x@{HERE}:{port}/inventory?ssl_ca_certs={ca}"
    sentinel = make_redis(url).connection_pool.sentinel_manager.sentinels[0]  # type: ignore[attr-defined]
    with pytest.raises(redis.ConnectionError, match="mismatch"):
        sentinel.ping()


def test_libpq_refuses_the_wrong_name(wrong_server: tuple[str, int, int]) -> None:
    ca, _, pg_port = wrong_server
    with pytest.raises(psycopg.OperationalError, match="does not match host name"):
        psycopg.connect(
            f"host={HERE} port={pg_port} user=u password=x connect_timeout=5 "
            + tls.libpq_params(ca)
        )


def test_an_error_is_a_refusal_of_the_name_only_when_it_says_so() -> None:
    assert impostor.wrong_name(ssl.SSLCertVerificationError("IP address mismatch, ..."))
    assert not impostor.wrong_name(ssl.SSLCertVerificationError("unable to get local issuer"))
    assert not impostor.wrong_name(TimeoutError("timed out"))
