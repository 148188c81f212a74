"""The article's herd effect, measured on a real ZooKeeper."""

from inventory.local.servers import ServerProcess
from inventory.scenarios.herd import compare


def test_one_watched_node_wakes_the_herd_and_the_sequential_lock_wakes_one(
    zk_server: ServerProcess,
) -> None:
    (low_small, _high_small), (low_big, high_big) = compare(zk_server.address, [4, 16], 0.005)
    low_notified, low_requests = low_big.per_acquisition
    high_notified, high_requests = high_big.per_acquisition
    # Sequential lock: at most one notification per acquisition, whatever the crowd.
    assert high_big.notifications <= high_big.waiters - 1
    assert high_notified <= 1.0
    # Single node: every release notifies everyone still waiting, so it grows with the crowd.
    assert low_notified > 2 * high_notified
    assert low_notified > low_small.per_acquisition[0]
    assert low_requests > high_requests
