"""The Redis client factory. Short timeouts: a Redis that is down must become a quick 503."""

from __future__ import annotations

import redis


def make_redis(url: str) -> redis.Redis:
    # from_url connects lazily: nothing touches the network until the first command.
    return redis.Redis.from_url(
        url, socket_connect_timeout=2.0, socket_timeout=5.0, decode_responses=True
    )
