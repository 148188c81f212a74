"""The intruder on Redis and its sentinels: FLUSHALL, CONFIG SET, ACL SETUSER, the lock fence
and lock keys, flags, guessed passwords, a forced failover. Refused: NOAUTH, WRONGPASS, NOPERM
(a user's command or key outside its ACL); with TLS on, a plain-text connection gets nothing."""

from __future__ import annotations

import os
from functools import partial
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from inventory.chaos.intruder.attempt import FLAG_LIKE, GUESS, Attempt, attempt
from inventory.cluster import topology


def _redis_refused(exc: Exception) -> bool:
    # redis-py turns NOPERM into NoPermissionError and NOAUTH/WRONGPASS into
    # AuthenticationError (or a ResponseError naming them), keeping the server's words.
    if isinstance(exc, (redis.exceptions.NoPermissionError, redis.exceptions.AuthenticationError)):
        return True
    text = str(exc)
    return any(word in text for word in ("NOAUTH", "WRONGPASS", "NOPERM", "no permissions"))


# The cluster's Redis speaks TLS only when it runs with TLS (INVENTORY_INTRUDER_TLS set by the
# run): the intruder then speaks TLS too, without checking the server (it wants in, not safety),
# and also tries the plain protocol, which must get nowhere.
TLS = bool(os.environ.get("INVENTORY_INTRUDER_TLS"))


def _plain_refused(exc: Exception) -> bool:
    """A TLS-only server closes a plain-text connection: nothing was answered."""
    return isinstance(exc, redis.exceptions.ConnectionError)


def _redis(
    host: str, port: int, user: str | None = None, password: str | None = None, tls: bool = TLS
) -> Any:
    """RESP2, so the command itself goes out and is answered (RESP3 opens with HELLO, refused
    before the command is sent); no retries (redis-py retries a refused login as if the
    connection had failed)."""
    secure: dict[str, Any] = {"ssl": True, "ssl_cert_reqs": "none"} if tls else {}
    return redis.Redis(
        host=host,
        port=port,
        username=user,
        password=password,
        protocol=2,
        retry=Retry(NoBackoff(), 0),
        socket_timeout=3,
        socket_connect_timeout=3,
        **secure,
    )


def redis_attempts(user: str | None = None, password: str | None = None) -> list[Attempt]:
    attempts = []
    who = f"as {user}" if user else "without a password"
    for node in topology.by_role("redis"):
        client = _redis(node.address, topology.REDIS_PORT, user, password)
        commands = [
            ("FLUSHALL", ("FLUSHALL",)),
            ("CONFIG SET appendonly", ("CONFIG", "SET", "appendonly", "yes")),
            ("DEL the lock fence", ("DEL", "inventory:fence")),
            ("SET a lock key", ("SET", "inventory:lock:intruder", "x")),
            ("KEYS *", ("KEYS", "*")),
            ("ACL SETUSER", ("ACL", "SETUSER", "intruder", "on", ">x", "+@all", "~*")),
        ]
        if user is None:
            commands += [
                ("SET a flag", ("SET", FLAG_LIKE, "orderId")),
                ("DEL a flag", ("DEL", FLAG_LIKE)),
            ]
        else:
            commands += [("GET a flag (the order service only sets them)", ("GET", FLAG_LIKE))]
        for name, command in commands:
            attempts.append(
                attempt(
                    "redis",
                    f"{node.name}: {name} {who}",
                    partial(client.execute_command, *command),
                    _redis_refused,
                )
            )
        client.close()
        if TLS:
            plain = _redis(node.address, topology.REDIS_PORT, user, password, tls=False)
            attempts.append(
                attempt(
                    "redis",
                    f"{node.name}: SET a flag over plain text (no TLS) {who}",
                    partial(plain.execute_command, "SET", FLAG_LIKE, "orderId"),
                    _plain_refused,
                )
            )
            plain.close()
        if user is None:
            for guessed in ("default", "order", "stock", "sentinel"):
                guess = _redis(node.address, topology.REDIS_PORT, guessed, GUESS)
                attempts.append(
                    attempt(
                        "redis",
                        f"{node.name}: log in as {guessed} with a guessed password",
                        guess.ping,
                        _redis_refused,
                    )
                )
                guess.close()
    if user is None:
        for node in topology.SENTINELS:
            sentinel = _redis(node.address, topology.SENTINEL_PORT)
            attempts += [
                attempt(
                    "redis",
                    f"sentinel on {node.name}: SENTINEL FAILOVER",
                    partial(
                        sentinel.execute_command, "SENTINEL", "FAILOVER", topology.REDIS_MASTER
                    ),
                    _redis_refused,
                ),
                attempt(
                    "redis",
                    f"sentinel on {node.name}: SENTINEL REMOVE",
                    partial(sentinel.execute_command, "SENTINEL", "REMOVE", topology.REDIS_MASTER),
                    _redis_refused,
                ),
            ]
            sentinel.close()
    return attempts
