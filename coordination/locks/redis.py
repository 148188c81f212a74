"""LOCK_BACKEND=redis: redis-py's Lock (SET NX PX, compare-and-delete release in Lua) with a
watchdog that renews the lease while the holder works, as Redisson does.

Two additions to the library, each for a reason:
- The fencing token is drawn in the same Lua script as the SET NX. Drawn afterwards (a plain
  INCR), a holder that paused between the two could draw a larger token than the holder that
  replaced it, and the token would fence nothing. The token is the counter's next value or the
  Redis server's clock in microseconds, whichever is larger: a Redis that keeps nothing on disk
  loses its counter when it restarts (or fails over to a replica that never got the last
  increment), and a counter starting again from 1 would be refused by every stock row that
  holds a higher fence. Time keeps the tokens growing across the restart, as long as the
  server's clock does not go back by more than the restart took; if it does (a failover to a
  host whose clock is behind), holders are refused (503, nothing written) until the clock
  passes the highest token: it fails safe.
- The watchdog: redis-py offers `reacquire()` but nothing that calls it. One daemon thread per
  backend renews every held lease every third of its TTL; a lease whose renewal failed, or that
  was not renewed within its TTL (the whole process paused), reports itself lost, and the holder
  aborts before commit.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time

import redis
from redis.exceptions import LockError as RedisLockError
from redis.lock import Lock

from coordination.locks.base import LockBackend, LockUnavailable, SequentialClaim

log = logging.getLogger(__name__)

FENCE_KEY = "inventory:fence"
ACQUIRE_WITH_FENCE = """
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    local now = redis.call('time')
    local floor = tonumber(now[1]) * 1000000 + tonumber(now[2])
    local token = math.max(tonumber(redis.call('get', KEYS[2]) or '0') + 1, floor)
    redis.call('set', KEYS[2], string.format('%.0f', token))
    return token
end
return 0
"""


class FencedLock(Lock):
    fence: int | None = None
    replicas = 0  # REDIS_LOCK_MIN_REPLICAS: WAIT for them in the acquiring round trip
    replica_wait_ms = 100
    replicated = 0  # how many had the lock's SET when it was granted

    def do_acquire(self, token: str) -> bool:
        ttl_ms = int(float(self.timeout or 10) * 1000)
        script = (ACQUIRE_WITH_FENCE, 2, self.name, FENCE_KEY, token, ttl_ms)
        if self.replicas:
            # WAIT counts the replicas that have *this connection's* writes: it must follow the
            # SET on the same connection (one pipeline), not go out later on whichever pooled
            # connection comes next, whose last write may be older and long replicated.
            pipe = self.redis.pipeline(transaction=False)
            pipe.eval(*script)
            pipe.wait(self.replicas, self.replica_wait_ms)
            fence, self.replicated = pipe.execute()
        else:
            fence = self.redis.eval(*script)
        if fence:
            self.fence = int(fence)
            return True
        return False


class _Held:
    def __init__(self, lock: FencedLock, ttl: float) -> None:
        self.lock = lock
        self.ttl = ttl
        self.renewed_at = time.monotonic()
        self.lost = False

    def valid(self) -> bool:
        return not self.lost and time.monotonic() - self.renewed_at < self.ttl


class RedisLocks(LockBackend):
    name = "redis"

    def __init__(
        self,
        client: redis.Redis,
        ttl: float = 10.0,
        poll_interval: float = 0.002,
        min_replicas: int = 0,
        replica_wait: float = 0.1,
    ) -> None:
        self.redis = client
        self.ttl = ttl
        # A grant counts only once this many replicas have it (WAIT): a failover to a replica
        # that never got the key would grant the lock, and its fencing counter, a second time
        # (`inventory demo redis-failover`). 0: Redis's default asynchronous replication.
        self.min_replicas = min_replicas
        self.replica_wait = replica_wait
        # redis-py polls SET NX; its default of 0.1 s between tries would cap a hot lock at
        # a few handoffs per second.
        self.poll_interval = poll_interval
        self._held: set[_Held] = set()
        self._guard = threading.Lock()
        self._watchdog: threading.Thread | None = None
        self._closed = threading.Event()

    def new_claim(self, names: list[str]) -> RedisClaim:
        return RedisClaim(self, names)

    def _watch(self, entry: _Held) -> None:
        with self._guard:
            self._held.add(entry)
            if self._watchdog is None or not self._watchdog.is_alive():
                self._watchdog = threading.Thread(
                    target=self._renew_forever, name="redis-lock-watchdog", daemon=True
                )
                self._watchdog.start()

    def _renew_forever(self) -> None:
        while not self._closed.wait(self.ttl / 3):
            with self._guard:
                entries = list(self._held)
            for entry in entries:
                try:
                    self._renew(entry)
                except Exception:  # one entry's surprise never stops the others' renewals:
                    # unrenewed, that lease stops being trusted by its own TTL
                    log.exception("redis lock %s not renewed", entry.lock.name)

    @staticmethod
    def _renew(entry: _Held) -> None:
        try:
            entry.lock.reacquire()
            entry.renewed_at = time.monotonic()
        except RedisLockError:
            entry.lost = True  # the key expired and may belong to someone else now
            log.warning("redis lock %s lost before release", entry.lock.name)
        except redis.RedisError as exc:
            log.warning("redis lock %s not renewed: %s", entry.lock.name, exc)

    def _release(self, entry: _Held) -> None:
        with self._guard:
            self._held.discard(entry)
        try:
            entry.lock.release()
        except RedisLockError:
            log.warning("redis lock %s had expired before release", entry.lock.name)
        except redis.RedisError as exc:
            log.warning(
                "redis lock %s release failed (%s); it expires by its TTL", entry.lock.name, exc
            )

    def healthy(self) -> bool:
        try:
            return bool(self.redis.ping())
        except redis.RedisError:
            return False

    def close(self) -> None:
        self._closed.set()


class RedisClaim(SequentialClaim):
    def __init__(self, locks: RedisLocks, names: list[str]) -> None:
        super().__init__(names)
        self.locks = locks
        self.entries: dict[str, _Held] = {}

    def take(self, name: str, timeout: float) -> tuple[int | None, str] | None:
        lock = FencedLock(
            self.locks.redis,
            f"inventory:lock:{name}",
            timeout=self.locks.ttl,
            sleep=self.locks.poll_interval,
            thread_local=False,
        )
        lock.replicas = self.locks.min_replicas
        lock.replica_wait_ms = int(self.locks.replica_wait * 1000)
        try:
            acquired = lock.acquire(blocking_timeout=timeout)
        except redis.RedisError as exc:
            raise LockUnavailable("redis", type(exc).__name__) from exc
        if not acquired:
            return None
        if self.locks.min_replicas:
            self._wait_for_replicas(lock)
        entry = _Held(lock, self.locks.ttl)
        self.entries[name] = entry
        self.locks._watch(entry)
        return lock.fence, str(lock.name)

    def _wait_for_replicas(self, lock: FencedLock) -> None:
        """The replicas that had the lock's SET (its acquiring round trip's WAIT): too few, and
        the lock is not granted."""
        wanted, acked = self.locks.min_replicas, int(lock.replicated)
        detail = f"{acked} of {wanted} replicas confirmed the lock"
        if acked >= wanted:
            return
        # Ungranted: released, so a failover cannot find it on the replica later (a failed
        # release leaves it to expire by its TTL).
        with contextlib.suppress(redis.RedisError):
            lock.release()
        raise LockUnavailable("redis replica", detail)

    def give_back(self, name: str) -> None:
        entry = self.entries.pop(name, None)
        if entry is not None:
            self.locks._release(entry)

    def still_held(self) -> bool:
        return all(entry.valid() for entry in self.entries.values())
