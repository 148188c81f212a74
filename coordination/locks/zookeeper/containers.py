"""Lock parents as ZooKeeper container nodes, so that they do not pile up.

Every goods id ever locked leaves a parent node (`/inventory/locks/<goods id>`) under which its
contenders queue. Created as a plain persistent node, it stays forever, and ZooKeeper's memory
grows with the catalogue (thousands of parents after a few bench runs). A container node
(ZooKeeper 3.5.3 and later; CreateMode.CONTAINER) is deleted by the server once its last child
has gone (its container manager looks every `znode.container.checkIntervalMs`, a minute by
default): the same thing Curator does for its lock recipes.

Why by hand: kazoo has no container support (python-zk/kazoo#334, open since 2015). A
container create is an ordinary create request (Create2's body, CreateMode CONTAINER = 4) under
its own opcode (19, createContainer), so it is sent as such through kazoo's request queue.

The price: a parent can vanish between its creation and a contender's create under it (the
server removed it, empty). The create then fails with NoNodeError, and the claim makes the
parent again and retries (zookeeper/claim.py).
"""

from __future__ import annotations

import contextlib

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError
from kazoo.protocol.paths import _prefix_root
from kazoo.protocol.serialization import Create2
from kazoo.security import OPEN_ACL_UNSAFE

CONTAINER = 4  # CreateMode.CONTAINER's flags


class CreateContainer(Create2):
    """ZooKeeper's createContainer request (OpCode.createContainer = 19)."""

    __slots__ = ()
    type = 19


def ensure_container(client: KazooClient, path: str, timeout: float = 10.0) -> None:
    """`path` exists as a container node (its own parent made as a plain node if missing).
    An existing node of any kind is left as it is."""
    # Looked up first: ZooKeeper checks CREATE on the parent before it finds that the node
    # exists, so an identity that may work under an existing path but not create it (the
    # election's /inventory/reconciler, laid out by the cluster) would get NoAuth.
    if client.exists(path):
        return
    parent = path.rsplit("/", 1)[0]
    if parent:
        client.ensure_path(parent)
    result = client.handler.async_result()
    acl = client.default_acl or OPEN_ACL_UNSAFE
    client._call(CreateContainer(_prefix_root(client.chroot, path), b"", acl, CONTAINER), result)
    with contextlib.suppress(NodeExistsError):
        result.get(timeout=timeout)
