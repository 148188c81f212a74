"""The intruder on ZooKeeper: delete and create lock and election nodes, delete Patroni's
leader key, rewrite its config, open an ACL. Refused: NoAuth."""

from __future__ import annotations

from functools import partial

from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import OPEN_ACL_UNSAFE

from inventory.chaos.intruder.attempt import Attempt, attempt
from inventory.cluster import topology


def zookeeper_attempts() -> list[Attempt]:
    def no_auth(exc: Exception) -> bool:
        return isinstance(exc, NoAuthError)

    client = KazooClient(hosts=topology.ZK_HOSTS, timeout=5)
    client.start(timeout=10)
    try:
        locks = "/inventory/locks"
        goods = client.get_children(locks)
        held = [f"{locks}/{g}/{c}" for g in goods for c in client.get_children(f"{locks}/{g}")]
        election = [
            f"/inventory/reconciler/{c}" for c in client.get_children("/inventory/reconciler")
        ]
        attempts = []
        for node in held[:3]:
            attempts.append(
                attempt(
                    "zookeeper",
                    f"delete lock node {node}",
                    partial(client.delete, node),
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
