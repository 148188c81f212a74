"""The chaos intruder's attempt on a held lock node, against a real ZooKeeper: a node whose lock
parent went away (a container node, deleted once empty) proves nothing and the next listed
node is tried; a node under a parent that refuses the intruder is refused (NoAuth)."""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NoNodeError
from kazoo.security import make_digest_acl

from inventory.chaos.intruder.on_zookeeper import _delete_one_of
from inventory.local.servers import ServerProcess
from tests.conftest import unique


def test_a_vanished_lock_parent_is_skipped_and_the_next_node_refuses(
    zk_server: ServerProcess,
) -> None:
    owner = KazooClient(hosts=zk_server.address, timeout=5, auth_data=[("digest", "owner:pw")])
    intruder = KazooClient(hosts=zk_server.address, timeout=5)
    owner.start(timeout=10)
    intruder.start(timeout=10)
    root = f"/{unique('intruder')}"
    try:
        acl = [make_digest_acl("owner", "pw", all=True)]
        owner.create(f"{root}/held", makepath=True, acl=acl)
        node = owner.create(f"{root}/held/lock-", ephemeral=True, sequence=True, acl=acl)
        gone = f"{root}/gone/lock-0000000001"  # its parent deleted since it was listed
        nodes = [gone, node]
        with pytest.raises(NoAuthError):
            _delete_one_of(intruder, nodes)
        assert nodes == [] and owner.exists(node) is not None
        with pytest.raises(NoNodeError):  # every one gone: not counted as refused
            _delete_one_of(intruder, [gone])
    finally:
        owner.delete(root, recursive=True)
        owner.stop()
        intruder.stop()
