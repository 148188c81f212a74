"""Who may change what in the cluster's ZooKeeper: digest identities and the ACLs of the paths
each works under, laid out once at `cluster up` by the ensemble's superuser.

ZooKeeper checks CREATE and DELETE on the *parent*: a lock node can be made or removed by an
identity only if the goods id's node under /inventory/locks lets it, and that node is made by
the stock service with its own ACL (coordination/locks/zookeeper/client.py's `digest_identity`: its
identity may do everything, everyone else may read). So:

    /inventory              superuser only; everyone reads
    /inventory/locks        stock: create, delete (and the rest); everyone reads
    /inventory/reconciler   reconciler: the election's nodes; everyone reads
    /inventory/relay        relay: the stock events relays' election; everyone reads
    /inventory/webhooks     deliverer: the webhook deliverers' election; everyone reads
    /service                patroni: its leader key, members, sync state; everyone reads

Reading stays open: lock queues, the election and Patroni's state name no secret, and the
operator's tools (`cluster status`, the chaos run) read them without an identity. The superuser
exists only for this layout (ZooKeeper's `superDigest`, a hash on the servers' command line;
its password is in the cluster's secrets file).
"""

from __future__ import annotations

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError
from kazoo.security import ACL, make_acl, make_digest_acl, make_digest_acl_credential

from inventory.cluster import tls, topology
from inventory.cluster.secrets import Secrets

SUPERUSER = "admin"
READ_FOR_ALL = make_acl("world", "anyone", read=True)
# path -> the identity that owns it (all permissions), besides the superuser
LAYOUT = {
    "/inventory": None,
    "/inventory/locks": "stock",
    "/inventory/reconciler": "reconciler",
    "/inventory/relay": "relay",
    "/inventory/webhooks": "deliverer",
    "/service": "patroni",
}


def super_digest_flag(secrets: Secrets) -> str:
    """The JVM flag that makes `admin` the ensemble's superuser (a salted hash, not the
    password: it may show in `ps`)."""
    digest = make_digest_acl_credential(SUPERUSER, secrets.zk[SUPERUSER])
    return f"-Dzookeeper.DigestAuthenticationProvider.superDigest={digest}"


def acl_of(owner: str | None, secrets: Secrets) -> list[ACL]:
    acl = [READ_FOR_ALL]
    if owner is not None:
        acl.insert(0, make_digest_acl(owner, secrets.zk[owner], all=True))
    return acl


def lay_out(secrets: Secrets, timeout: float = 20.0) -> None:
    """Create the paths with their ACLs, or set them again on paths that exist (a cluster
    brought up again over an ensemble's old data)."""
    client = KazooClient(
        hosts=topology.ZK_HOSTS,
        auth_data=[("digest", secrets.zk_auth(SUPERUSER))],
        **tls.kazoo_kwargs(secrets.tls_ca),
    )
    client.start(timeout=timeout)
    try:
        for path, owner in LAYOUT.items():
            acl = acl_of(owner, secrets)
            try:
                client.create(path, b"", acl=acl)
            except NodeExistsError:
                client.set_acls(path, acl)
    finally:
        client.stop()
        client.close()
