"""The ZooKeeper client's reconnection policy (coordination.locks.zookeeper): after an outage of
the ensemble it looks again at least about once a second, where kazoo's default doubles its delay up
to an hour (a 10 s partition without quorum left clients 5 s more without a connection). The
policy object is exercised as kazoo's connection loop uses it, with its sleeps recorded."""

from __future__ import annotations

import pytest
from kazoo.retry import ForceRetryError, RetryFailedError

from coordination.locks.zookeeper import RECONNECT_MAX_DELAY, ZooKeeperLocks


def test_a_lost_connection_is_tried_again_at_least_about_once_a_second() -> None:
    locks = ZooKeeperLocks("127.0.0.1:1", "/t")  # never started: nothing is connected
    policy = locks._client._conn_retry.copy()  # what the connection loop runs, one per outage
    assert policy.max_tries == -1  # forever, as kazoo's own: a client never gives up
    slept: list[float] = []
    policy.sleep_func = slept.append
    policy.max_tries = 40  # to end this test: 40 failed looks, a long outage
    policy.interrupt = None  # the client's "stopped?" (it is: never started); sleeps whole

    def connect() -> None:
        raise ForceRetryError("the ensemble is away")

    with pytest.raises(RetryFailedError):
        policy(connect)
    assert len(slept) == 39
    assert slept[0] < 0.2  # the first looks come quickly (a blip)
    assert max(slept) <= RECONNECT_MAX_DELAY * 1.4  # kazoo's jitter: x0.6 to x1.4
    # kazoo's default would be sleeping minutes between looks by now (doubling from 0.1 s)
    assert sum(slept[-10:]) < 10 * RECONNECT_MAX_DELAY * 1.4 < 0.1 * 2**20
