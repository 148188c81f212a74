"""Patroni with a ZooKeeper digest identity: run by the system's python3 (Debian's patroni and
kazoo), not the project's environment, as `python3 patroni_digest.py <patroni.yml>`.

Why this wrapper: Patroni 3.0 hands kazoo only x509 ACLs (`zookeeper.set_acls`, for client
certificates), and this cluster's ZooKeeper identities are digests (user:password, as the
stock service and the reconcilers have). Without an identity, Patroni's leader key would carry
`world:anyone` and any host on the network could delete it and force a failover. The wrapper
gives Patroni's KazooClient the two arguments kazoo has for this, `auth_data` and
`default_acl`, and then runs Patroni's own main unchanged. The identity comes from the
environment variable INVENTORY_PATRONI_ZK_AUTH (`user:password`), removed before Patroni starts
postgres.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    from kazoo.security import make_acl, make_digest_acl  # the system's kazoo, as Patroni's
    from patroni.__main__ import main as patroni_main
    from patroni.dcs import zookeeper

    identity = os.environ.pop("INVENTORY_PATRONI_ZK_AUTH")
    user, password = identity.split(":", 1)
    acl = [make_digest_acl(user, password, all=True), make_acl("world", "anyone", read=True)]
    original = zookeeper.PatroniKazooClient.__init__

    def with_identity(self: object, *args: object, **kwargs: object) -> None:
        kwargs["auth_data"] = [("digest", identity)]
        kwargs["default_acl"] = acl
        original(self, *args, **kwargs)

    zookeeper.PatroniKazooClient.__init__ = with_identity
    sys.argv = ["patroni", *sys.argv[1:]]
    patroni_main()


if __name__ == "__main__":
    main()
