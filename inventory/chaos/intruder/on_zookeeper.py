"""The intruder on ZooKeeper: delete and create lock and election nodes, delete Patroni's
leader key, rewrite its config, open an ACL. Refused: NoAuth. With TLS (the run sets
INVENTORY_INTRUDER_TLS) it speaks TLS too, without checking the ensemble (it wants in), and also
opens a session in plain text, as a client without TLS would: the secure port closes it
unanswered."""

from __future__ import annotations

import os
import socket
from functools import partial

from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NoNodeError
from kazoo.protocol.serialization import Connect, int_struct
from kazoo.security import OPEN_ACL_UNSAFE

from inventory.chaos.intruder.attempt import Attempt, attempt
from inventory.cluster import topology

TLS = bool(os.environ.get("INVENTORY_INTRUDER_TLS"))


def _plain_session(host: str) -> bytes:
    """A ZooKeeper client's first words (ConnectRequest: a new session, no password) in plain
    text. A server that speaks TLS only closes the connection without a reply."""
    hello = Connect(0, 0, 4000, 0, b"\x00" * 16, False).serialize()
    with socket.create_connection((host, topology.ZK_PORT), timeout=3) as s:
        s.sendall(int_struct.pack(len(hello)) + bytes(hello))
        reply = s.recv(64)
    if not reply:
        raise ConnectionError("closed without an answer")
    return reply


def _children(client: KazooClient, path: str) -> list[str]:
    """A node's children as they are now; none when it is gone. The lock parents are container
    nodes, which ZooKeeper deletes once empty, so one listed a moment ago may be gone already
    (a chaos run's intrusion once failed on it: NoNodeError)."""
    try:
        return list(client.get_children(path))
    except NoNodeError:
        return []


def _delete_one_of(client: KazooClient, nodes: list[str]) -> str:
    """Delete the first of `nodes` still there (each tried is taken off the list). ZooKeeper
    checks the parent's ACL before the node, so NoNode means the lock parent itself is gone
    (a container node, deleted once its last waiter left since it was listed): that proves
    nothing, and the next node is tried. Raises NoNodeError when every one is gone."""
    while nodes:
        node = nodes.pop(0)
        try:
            client.delete(node)
        except NoNodeError:
            continue
        return f"deleted {node}"
    raise NoNodeError("every listed lock node was gone before it could be tried")


def _closed(exc: Exception) -> bool:
    return isinstance(exc, ConnectionError)  # a reset is one too; a timeout proves nothing


def zookeeper_attempts() -> list[Attempt]:
    def no_auth(exc: Exception) -> bool:
        return isinstance(exc, NoAuthError)

    plain = [
        attempt(
            "zookeeper",
            f"{h.name}: open a session in plain text (no TLS)",
            partial(_plain_session, h.address),
            _closed,
        )
        for h in topology.by_role("zookeeper")
        if TLS
    ]
    secure = {"use_ssl": True, "verify_certs": False} if TLS else {}
    client = KazooClient(hosts=topology.ZK_HOSTS, timeout=5, **secure)
    client.start(timeout=10)
    try:
        locks = "/inventory/locks"
        goods = _children(client, locks)
        held = [f"{locks}/{g}/{c}" for g in goods for c in _children(client, f"{locks}/{g}")]
        election = [
            f"/inventory/reconciler/{c}" for c in _children(client, "/inventory/reconciler")
        ]
        attempts = plain
        left = list(held)
        for n in range(min(3, len(held))):
            attempts.append(
                attempt(
                    "zookeeper",
                    f"delete a held lock node (try {n + 1}, of {len(held)} listed)",
                    partial(_delete_one_of, client, left),
                    no_auth,
                )
            )
        first = f"{locks}/{goods[0]}" if goods else f"{locks}/intruder"
        attempts += [
            attempt(
                "zookeeper",
                f"create a lock node under {first}",
                lambda: client.create(
                    f"{first}/lock-", ephemeral=True, sequence=True, makepath=True
                ),
                no_auth,
            ),
            attempt(
                "zookeeper",
                "create a lock parent /inventory/locks/intruder",
                lambda: client.create(f"{locks}/intruder"),
                no_auth,
            ),
            attempt(
                "zookeeper",
                f"delete {locks} (every lock queue)",
                lambda: client.delete(locks, recursive=False),
                no_auth,
            ),
            attempt(
                "zookeeper",
                f"open {locks} to everyone (setACL)",
                lambda: client.set_acls(locks, OPEN_ACL_UNSAFE),
                no_auth,
            ),
        ]
        for node in election[:2]:
            attempts.append(
                attempt(
                    "zookeeper",
                    f"delete election node {node}",
                    partial(client.delete, node),
                    no_auth,
                )
            )
        attempts += [
            attempt(
                "zookeeper",
                "create an election node",
                lambda: client.create(
                    "/inventory/reconciler/n_", b"intruder", ephemeral=True, sequence=True
                ),
                no_auth,
            ),
            attempt(
                "zookeeper",
                "delete Patroni's leader key",
                lambda: client.delete(f"/service/{topology.PATRONI_SCOPE}/leader"),
                no_auth,
            ),
            attempt(
                "zookeeper",
                "rewrite Patroni's cluster config",
                lambda: client.set(f"/service/{topology.PATRONI_SCOPE}/config", b"{}"),
                no_auth,
            ),
        ]
        return attempts
    finally:
        client.stop()
        client.close()
