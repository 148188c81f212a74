"""ZooKeeper replies lost on the wire while the session lives on: a lock node the client cannot
account for would block its queue until the process ends (the session outlives a short
disconnection). Each test cuts the connection at one request through a proxy, then shows that
a second client, in another session, still gets the lock."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from coordination.locks import LockUnavailable
from coordination.locks.zookeeper import ZooKeeperLocks
from inventory.local.servers import ServerProcess
from tests.conftest import unique
from tests.zk_proxy import CREATE, CREATE2, DELETE, MULTI, CuttingProxy


@pytest.fixture
def proxy(zk_server: ServerProcess) -> Iterator[CuttingProxy]:
    proxy = CuttingProxy(zk_server.port)
    yield proxy
    proxy.close()


@pytest.fixture
def clients(
    zk_server: ServerProcess, proxy: CuttingProxy
) -> Iterator[tuple[ZooKeeperLocks, ZooKeeperLocks]]:
    """The client under test, through the proxy, and a bystander that connects directly."""
    root = f"/test-locks/{unique('root')}"
    through_proxy = ZooKeeperLocks(proxy.address, root, session_timeout=10)
    bystander = ZooKeeperLocks(zk_server.address, root)
    yield through_proxy, bystander
    through_proxy.close()
    bystander.close()


def queue(locks: ZooKeeperLocks, name: str) -> list[str]:
    return locks.client.get_children(locks.path(name))


def warmed_up(locks: ZooKeeperLocks, names: list[str]) -> list[str]:
    """One hold first, so the lock paths exist and the cut falls on the lock node itself."""
    with locks.hold(names, timeout=5):
        pass
    return names


@pytest.mark.parametrize("names", [1, 2], ids=["one name", "two names"])
def test_a_release_lost_on_the_wire_is_redone_after_reconnecting(
    clients: tuple[ZooKeeperLocks, ZooKeeperLocks], proxy: CuttingProxy, names: int
) -> None:
    locks, bystander = clients
    wanted = [unique("lock") for _ in range(names)]
    with locks.hold(wanted, timeout=5):
        proxy.cut_at({DELETE, MULTI}, applied=False)  # the release never reaches the server
    assert proxy.cuts == 1
    with bystander.hold(wanted, timeout=8) as lease:
        assert set(lease.tokens) == set(wanted)
    assert all(queue(bystander, name) == [] for name in wanted)


@pytest.mark.parametrize("names", [1, 2], ids=["one name", "two names"])
def test_an_enqueue_whose_reply_is_lost_finds_its_own_node(
    clients: tuple[ZooKeeperLocks, ZooKeeperLocks], proxy: CuttingProxy, names: int
) -> None:
    """The create was applied; the retry must find that node, not queue behind it."""
    locks, bystander = clients
    wanted = warmed_up(locks, [unique("lock") for _ in range(names)])
    proxy.cut_at({CREATE, CREATE2, MULTI}, applied=True)
    with locks.hold(wanted, timeout=8):
        assert proxy.cuts == 1
        assert all(len(queue(bystander, name)) == 1 for name in wanted)
    with bystander.hold(wanted, timeout=5):
        pass


def test_a_claim_that_gives_up_after_a_lost_enqueue_leaves_no_node_behind(
    clients: tuple[ZooKeeperLocks, ZooKeeperLocks], proxy: CuttingProxy
) -> None:
    """The create was applied, the reply lost, and the connection stays down past the claim's
    deadline: the claim fails without knowing its node, which must still be deleted."""
    locks, bystander = clients
    [name] = warmed_up(locks, [unique("lock")])
    proxy.cut_at({CREATE, CREATE2}, applied=True, then_refuse_for=2.0)
    with pytest.raises(LockUnavailable), locks.hold([name], timeout=1.0):
        pass
    assert proxy.cuts == 1 and proxy.reconnects_refused >= 1
    assert len(queue(bystander, name)) == 1  # the node the failed claim made is still there
    with bystander.hold([name], timeout=8):
        pass
    assert queue(bystander, name) == []
