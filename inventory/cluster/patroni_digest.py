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

And the ensemble's name checked: Debian's kazoo (2.8) checks a TLS server's chain and never its
name, and Patroni 3.0 has no setting for it, so any host holding a certificate of the cluster's
CA could stand in for ZooKeeper and hand Patroni a leader key. The wrapper replaces kazoo's
TLS connection with one whose context checks that the certificate names the address dialled
(the ensemble's hosts are given by IP: the certificate's IP subjectAltName).
"""

from __future__ import annotations

import os
import sys
from typing import Any


def check_host_names() -> None:
    """kazoo's TLS connections, from here on, check the server's name as well as its chain:
    with the CA given (`ca`), a certificate must name the address dialled. Plain connections
    are left to kazoo."""
    import socket
    import ssl

    from kazoo.handlers import utils

    plain = utils.create_tcp_connection

    def checked(module: Any, address: Any, timeout: Any = None, **kw: Any) -> Any:
        if not kw.get("use_ssl"):
            return plain(module, address, timeout, **kw)
        context = ssl.create_default_context(cafile=kw.get("ca"))  # names and chain checked
        if kw.get("certfile") and kw.get("keyfile"):
            context.load_cert_chain(kw["certfile"], kw["keyfile"], kw.get("keyfile_password"))
        family = socket.getaddrinfo(address[0], address[1], 0, socket.SOCK_STREAM)[0][0]
        conn = context.wrap_socket(module.socket(family), server_hostname=address[0])
        conn.settimeout(timeout)
        conn.connect(address)
        return conn

    utils.create_tcp_connection = checked


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
    check_host_names()
    sys.argv = ["patroni", *sys.argv[1:]]
    patroni_main()


if __name__ == "__main__":
    main()
