"""RedLock against three real Redis servers: a majority is enough, a minority is not, tokens
stay unique and growing while holders in two processes compete, and a grant outlives nothing
past its validity. The backend suite in test_locks.py covers exclusion and timeouts."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from coordination.locks import LockLost, LockTimeout, LockUnavailable
from coordination.locks.redlock import RedLocks
from inventory.local.servers import ServerProcess
from tests.conftest import unique


@pytest.fixture
def urls(redlock_servers: list[ServerProcess]) -> list[str]:
    return [f"redis://{server.address}/0" for server in redlock_servers]


@pytest.fixture
def locks(urls: list[str]) -> Iterator[RedLocks]:
    backend = RedLocks(urls, ttl=5, prefix=f"{unique('t')}:")
    yield backend
    backend.close()


def keys_on_each(locks: RedLocks, name: str) -> list[int]:
    return [int(server.exists(locks.key(name))) for server in locks.servers]


def test_a_grant_is_on_every_server_and_released_from_all(locks: RedLocks) -> None:
    name = unique("lock")
    with locks.hold([name], timeout=5) as lease:
        assert keys_on_each(locks, name) == [1, 1, 1]
        lease.check()
    assert keys_on_each(locks, name) == [0, 0, 0]


def test_one_server_paused_leaves_a_majority_two_leave_none(
    locks: RedLocks, redlock_servers: list[ServerProcess]
) -> None:
    name = unique("lock")
    redlock_servers[0].pause()
    try:
        with locks.hold([name], timeout=5) as lease:
            assert keys_on_each_reachable(locks, name, skip=0) == [1, 1]
            lease.check()
        redlock_servers[1].pause()
        try:
            with pytest.raises(LockUnavailable, match="1 of 3"), locks.hold([name], timeout=2):
                pass
        finally:
            redlock_servers[1].resume()
    finally:
        redlock_servers[0].resume()


def keys_on_each_reachable(locks: RedLocks, name: str, skip: int) -> list[int]:
    return [
        int(server.exists(locks.key(name))) for i, server in enumerate(locks.servers) if i != skip
    ]


def test_a_name_held_on_a_majority_elsewhere_is_not_granted(locks: RedLocks) -> None:
    """Someone else holds the key on two servers: this client gets at most one, and gives
    that back rather than keeping a minority grant."""
    name = unique("lock")
    for server in locks.servers[1:]:
        server.set(locks.key(name), "someone-else", px=3000)
    with pytest.raises(LockTimeout), locks.hold([name], timeout=0.3):
        pass
    assert keys_on_each(locks, name)[0] == 0


def test_tokens_are_unique_and_grow_across_two_processes_competing(urls: list[str]) -> None:
    """Two backends stand for two processes; every grant's token is new, and the tokens of
    one name grow in the order the grants were made (each holder records its token while it
    holds the name, so the recorded order is the grant order)."""
    prefix = f"{unique('t')}:"
    backends = [RedLocks(urls, ttl=5, prefix=prefix) for _ in range(2)]
    name = unique("lock")
    seen: list[int] = []
    guard = threading.Lock()

    def work(i: int) -> None:
        for _ in range(15):
            with backends[i % 2].hold([name], timeout=20) as lease:
                token = lease.tokens[name]
                assert token is not None
                with guard:
                    seen.append(token)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for backend in backends:
        backend.close()
    assert len(seen) == 60
    assert seen == sorted(seen) and len(set(seen)) == 60


def test_a_holder_past_its_validity_reports_itself_lost(urls: list[str]) -> None:
    locks = RedLocks(urls, ttl=0.5, prefix=f"{unique('t')}:")
    name = unique("lock")
    with locks.hold([name], timeout=5) as stale:
        time.sleep(0.6)
        with pytest.raises(LockLost):
            stale.check()
        with locks.hold([name], timeout=5) as fresh:  # the keys expired: granted again
            assert fresh.tokens[name] > stale.tokens[name]  # type: ignore[operator]
    locks.close()
