"""The Redis client factory. Short timeouts: a Redis that is down must become a quick 503.

Two kinds of REDIS_URL:

    redis://[user:password@]host:port/db
    redis+sentinel://[user:password@]sentinel1:26379,sentinel2:26379,.../master-name[/db]
        [?sentinel_password=...]
    rediss+sentinel://...&ssl_ca_certs=/path/to/ca.crt

The second finds the primary through Sentinel (redis-py's `Sentinel.master_for`): after a
failover the next command goes to the promoted replica. The user and password are this
service's ACL user on Redis; `sentinel_password`, the sentinels' own. `rediss+sentinel` speaks
TLS to the sentinels and to Redis, each checked against `ssl_ca_certs` (as `rediss://` does for
one server).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import redis
from redis.sentinel import Sentinel

from shared.errors import DependencyUnavailable
from shared.redis_tls import SharedSentinelSSLConnection, SharedSSLConnection

SENTINEL_SCHEME = "redis+sentinel"
TLS_SENTINEL_SCHEME = "rediss+sentinel"
TIMEOUTS = {"socket_connect_timeout": 2.0, "socket_timeout": 5.0}


class RedisUnavailable(DependencyUnavailable):
    dependency = "redis"

    def answer(self) -> str:
        return f"redis unavailable: {self}"


def make_redis(url: str) -> redis.Redis:
    # Nothing touches the network until the first command.
    if url.startswith((f"{SENTINEL_SCHEME}://", f"{TLS_SENTINEL_SCHEME}://")):
        return _through_sentinel(url)
    shared: dict[str, Any] = {}
    if url.startswith("rediss://"):  # TLS: one context per process (shared/redis_tls.py)
        shared["connection_class"] = SharedSSLConnection
    return redis.Redis.from_url(url, decode_responses=True, **TIMEOUTS, **shared)


def _through_sentinel(url: str) -> redis.Redis:
    parts = urlsplit(url)
    hosts = parts.netloc.rsplit("@", 1)[-1]
    sentinels = [(h.rsplit(":", 1)[0], int(h.rsplit(":", 1)[1])) for h in hosts.split(",")]
    path = [p for p in parts.path.split("/") if p]
    if not path:
        raise ValueError(f"{SENTINEL_SCHEME} URL needs the master's name: {url}")
    master, db = path[0], int(path[1]) if len(path) > 1 else 0
    query = parse_qs(parts.query)
    sentinel_password = query.get("sentinel_password", [None])[0]
    credentials: dict[str, Any] = {
        "username": unquote(parts.username) if parts.username else None,
        "password": unquote(parts.password) if parts.password else None,
    }
    secure: dict[str, Any] = {}
    if parts.scheme == TLS_SENTINEL_SCHEME:
        ca = query.get("ssl_ca_certs", [None])[0]
        if not ca:
            raise ValueError(f"{TLS_SENTINEL_SCHEME} URL needs ssl_ca_certs=<the CA's file>")
        secure = {"ssl": True, "ssl_ca_certs": ca, "ssl_cert_reqs": "required"}
    sentinel = Sentinel(
        sentinels,
        sentinel_kwargs={"password": sentinel_password, **TIMEOUTS, **secure},
        **TIMEOUTS,
        **secure,
    )
    if secure:  # TLS to the primary: one context per process (shared/redis_tls.py)
        credentials["connection_class"] = SharedSentinelSSLConnection
    return sentinel.master_for(master, db=db, decode_responses=True, **credentials, **TIMEOUTS)
