"""`inventory bench --auth`, PostgreSQL's part: trust against scram-sha-256, and clear against
TLS (the cluster's TLS, inventory/cluster/tls.py), on a PostgreSQL of
the bench's own (initdb as the postgres user, so root only; the machine's server is not
touched)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

from inventory.bench.auth_pair import PASSWORD, Pair, measure_pair
from inventory.cluster import tls
from inventory.local.servers import free_port, wait_until

PG_BIN = Path("/usr/lib/postgresql/15/bin")


@contextlib.contextmanager
def own_postgres(folder: Path) -> Iterator[tuple[int, str] | None]:
    """A PostgreSQL of the bench's own with two login roles, `open` (trust) and `scram`
    (scram-sha-256), on loopback, TLS offered with a certificate of the bench's own CA (the
    cluster's code makes both); None when not root (initdb runs as the postgres user)."""
    if os.geteuid() != 0 or not (PG_BIN / "initdb").exists():
        yield None
        return
    data, port = folder / "pg", free_port()
    folder.mkdir(parents=True, exist_ok=True)
    shutil.chown(folder, "postgres", "postgres")
    as_postgres = ["runuser", "-u", "postgres", "--"]
    subprocess.run(
        [
            *as_postgres,
            str(PG_BIN / "initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "--auth=trust",
            "--no-sync",
        ],
        check=True,
        capture_output=True,
    )
    certs = tls.make(folder, ["127.0.0.1"])
    tls.install_server_files(folder, data)
    with open(data / "pg_hba.conf", "w") as hba:
        hba.write(
            "local all all trust\nhost all open 127.0.0.1/32 trust\n"
            "host all scram 127.0.0.1/32 scram-sha-256\n"
        )
    server = subprocess.Popen(
        [
            *as_postgres,
            str(PG_BIN / "postgres"),
            "-D",
            str(data),
            "-p",
            str(port),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            f"unix_socket_directories={folder}",
            "-c",
            "ssl=on",
            "-c",
            f"ssl_cert_file={data / tls.CERT}",
            "-c",
            f"ssl_key_file={data / tls.KEY}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        import psycopg

        def up() -> bool:
            try:
                psycopg.connect(
                    host=str(folder), port=port, user="postgres", dbname="postgres"
                ).close()
                return True
            except psycopg.Error:
                return False

        wait_until(up, 30, "the bench's PostgreSQL")
        with psycopg.connect(
            host=str(folder), port=port, user="postgres", dbname="postgres", autocommit=True
        ) as conn:
            conn.execute("CREATE ROLE open LOGIN")
            conn.execute(f"CREATE ROLE scram LOGIN PASSWORD '{PASSWORD}'")
        yield port, str(certs / tls.CA)
    finally:
        server.terminate()
        server.wait(30)


def postgres_pairs(port: int, ca: str, seconds: float) -> list[Pair]:
    import psycopg

    clear = "sslmode=disable"
    checked = tls.libpq_params(ca)

    def connect(role: str, tls_args: str, autocommit: bool = False) -> psycopg.Connection:
        password = PASSWORD if role == "scram" else None
        return psycopg.connect(
            f"host=127.0.0.1 port={port} user={role} dbname=postgres {tls_args}",
            password=password,
            autocommit=autocommit,
        )

    def fresh(role: str, tls_args: str) -> Callable[[], None]:
        def run() -> None:
            with connect(role, tls_args) as conn:
                conn.execute("SELECT 1")

        return run

    kept = {
        name: connect(role, tls_args, autocommit=True)
        for name, role, tls_args in (
            ("open", "open", clear),
            ("scram", "scram", clear),
            ("tls", "scram", checked),
        )
    }

    def query(name: str, text: str) -> Callable[[], object]:
        return lambda: kept[name].execute(text).fetchall()

    page = "SELECT repeat('x', 8192)"  # a reply big enough for encryption to show
    try:
        return [
            measure_pair(
                "PostgreSQL",
                "connection opened (trust vs scram-sha-256), SELECT 1, closed",
                fresh("open", clear),
                fresh("scram", clear),
                seconds,
            ),
            measure_pair(
                "PostgreSQL",
                "SELECT 1 on a kept connection (trust vs scram-sha-256)",
                query("open", "SELECT 1"),
                query("scram", "SELECT 1"),
                seconds,
            ),
            measure_pair(
                "PostgreSQL TLS",
                "connection opened (scram; clear vs TLS, verify-full), SELECT 1, closed",
                fresh("scram", clear),
                fresh("scram", checked),
                seconds,
            ),
            measure_pair(
                "PostgreSQL TLS",
                "SELECT 1 on a kept connection (clear vs TLS)",
                query("scram", "SELECT 1"),
                query("tls", "SELECT 1"),
                seconds,
            ),
            measure_pair(
                "PostgreSQL TLS",
                "8 kB reply on a kept connection (clear vs TLS)",
                query("scram", page),
                query("tls", page),
                seconds,
            ),
        ]
    finally:
        for conn in kept.values():
            conn.close()
