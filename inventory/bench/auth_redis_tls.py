"""`inventory bench --auth`, Redis's TLS rows: one redis-server of the bench's own with a plain
port and a TLS port (the cluster's settings, tls.py), the same commands over each; and a TLS
connection opened with redis-py's own connection class, which builds an SSL context for every
connection, against shared/redis_tls.py's, which shares one per process (what every pool of a
service pays again after a failover)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import redis

from inventory.bench.auth_pair import Pair, measure_pair
from inventory.cluster import tls
from inventory.local.servers import free_port, wait_until
from shared.redis_client import TIMEOUTS, make_redis


def redis_tls_pairs(folder: Path, seconds: float) -> list[Pair]:
    """One redis-server with a plain port and a TLS port (the cluster's settings, tls.py):
    the same commands over each."""
    tls.make_server(folder, tls.REDIS_STEM, ["127.0.0.1"])
    ca = str(folder / tls.FOLDER / tls.CA)
    plain_port, tls_port = free_port(), free_port()
    lines = tls.redis_server_lines(ca, tls_port).replace("port 0\n", f"port {plain_port}\n")
    config = folder / "redis-tls.conf"
    config.write_text(f'bind 127.0.0.1\nsave ""\nappendonly no\n{lines}')
    server = subprocess.Popen(
        ["redis-server", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    clear = redis.Redis(host="127.0.0.1", port=plain_port, protocol=2)
    secure = redis.Redis(
        host="127.0.0.1",
        port=tls_port,
        protocol=2,
        **tls.redis_client_kwargs(ca),  # type: ignore[arg-type]
    )
    try:
        wait_until(lambda: bool(clear.ping()), 20, "the bench's Redis with TLS")

        def fresh(port: int, extra: dict[str, object]) -> Callable[[], None]:
            def run() -> None:
                client = redis.Redis(host="127.0.0.1", port=port, protocol=2, **extra)  # type: ignore[arg-type]
                client.ping()
                client.close()

            return run

        def flag(client: redis.Redis) -> Callable[[], object]:
            return lambda: (
                client.set("1795560000000ab", "orderId"),
                client.delete("1795560000000ab"),
            )

        return [
            measure_pair(
                "Redis TLS",
                "connection opened, PING, closed (clear vs TLS, verified)",
                fresh(plain_port, {}),
                fresh(tls_port, tls.redis_client_kwargs(ca)),
                seconds,
            ),
            measure_pair(
                "Redis TLS",
                "flag SET + DEL on a kept connection (clear vs TLS)",
                flag(clear),
                flag(secure),
                seconds,
            ),
            context_pair(tls_port, ca, seconds),
        ]
    finally:
        clear.close()
        secure.close()
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:  # never left running, whatever happened above
            server.kill()
            server.wait()


def context_pair(port: int, ca: str, seconds: float) -> Pair:
    """A TLS connection opened, PING, closed: redis-py's own client for a rediss:// URL (its
    SSLConnection builds a context, loading the system's CA store and then the CA, for every
    connection) against the services' own (shared.redis_client.make_redis: the same URL and
    settings, its SharedSSLConnection sharing one context per process). Before and after
    shared/redis_tls.py; the CPU column says what each connection costs the client."""
    url = f"rediss://127.0.0.1:{port}/0?ssl_ca_certs={ca}&ssl_cert_reqs=required"

    def fresh(make: Callable[[], redis.Redis]) -> Callable[[], None]:
        def run() -> None:
            client = make()
            client.ping()
            client.close()

        return run

    def own() -> redis.Redis:
        # What make_redis built before shared/redis_tls.py: the same URL and options.
        return redis.Redis.from_url(url, decode_responses=True, **TIMEOUTS)

    return measure_pair(
        "Redis TLS",
        "TLS connection opened, PING, closed (SSL context: one per connection vs shared)",
        fresh(own),
        fresh(lambda: make_redis(url)),
        seconds,
    )
