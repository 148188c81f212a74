"""LOCK_BACKEND=redlock: RedLock (seed 003) on N independent Redis servers (REDLOCK_URLS, 3 or
5). A name is held when a majority of the servers granted it within the validity time (the TTL
minus the time the acquisition took, minus a clock-drift margin); release deletes it on all.

Written here rather than taken from pottery's Redlock (or redis-py's Lock on each server):
neither gives a fencing token, and a token cannot be added after the fact. Kleppmann's critique
of RedLock (in seed 003) is exactly that it has none. This one draws it in two round trips, as
a ballot: read the name's counter on every server and take the highest (the floor); then, on
each server in one Lua script, set the key only if it is free AND the counter is still at most
the floor, and raise the counter to floor + 1. Any two grants of one name share a server (two
majorities meet), and whichever was applied there second saw the first's counter and so has a
floor at or above the first's token: tokens are unique and grow in the order the grants landed.
That argument needs servers that keep their counters: a Redis restarted without its data (as
the stack's are: nothing saved) may hand a token out twice. The fence then still refuses most
stale writes (stock_service/storage/store.py's compare-and-set), but that is the critique's point.

No watchdog renews a RedLock lease: the validity time is the whole contract, and what happens
when a holder outlives it (a pause) is what `inventory demo redlock` shows. A hold that runs
past its validity reports itself lost before commit.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
import uuid

import redis

from coordination.locks.base import LockBackend, LockUnavailable, SequentialClaim

log = logging.getLogger(__name__)

# KEYS[1] the lock, KEYS[2] its counter; ARGV[1] the holder's value, ARGV[2] TTL in ms,
# ARGV[3] the floor read in the first round. -1: held by someone; -2: granted since our read.
GRANT = """
if redis.call('exists', KEYS[1]) == 1 then return -1 end
local floor = tonumber(ARGV[3])
if tonumber(redis.call('get', KEYS[2]) or '0') > floor then return -2 end
redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('set', KEYS[2], floor + 1)
return floor + 1
"""
# Delete the key only if it is still this holder's (the usual compare-and-delete).
RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""
CLOCK_DRIFT_FACTOR = 0.01  # the RedLock paper's margin: 1% of the TTL, plus 2 ms


class RedLocks(LockBackend):
    name = "redlock"

    def __init__(
        self,
        urls: list[str],
        ttl: float = 10.0,
        poll_interval: float = 0.005,
        server_timeout: float = 0.1,
        prefix: str = "inventory:redlock:",
    ) -> None:
        if not urls:
            raise ValueError("LOCK_BACKEND=redlock needs REDLOCK_URLS (3 or 5 Redis servers)")
        self.urls = urls
        # Each server answers within a small part of the TTL or counts as failed: a slow
        # server must not eat the validity time (the paper's advice).
        self.servers = [
            redis.Redis.from_url(
                url, socket_timeout=server_timeout, socket_connect_timeout=server_timeout
            )
            for url in urls
        ]
        self.quorum = len(urls) // 2 + 1
        self.ttl = ttl
        self.poll_interval = poll_interval
        self.prefix = prefix

    def new_claim(self, names: list[str]) -> RedLockClaim:
        return RedLockClaim(self, names)

    def key(self, name: str) -> str:
        return f"{self.prefix}lock:{name}"

    def counter(self, name: str) -> str:
        return f"{self.prefix}fence:{name}"

    def floor(self, name: str) -> int:
        """Round one: the highest counter a majority reports."""
        answers = []
        for server in self.servers:
            try:
                answers.append(int(server.get(self.counter(name)) or 0))
            except redis.RedisError:
                continue
        if len(answers) < self.quorum:
            raise LockUnavailable(
                "redlock", f"{len(answers)} of {len(self.servers)} Redis servers answered"
            )
        return max(answers)

    def try_grant(self, name: str, value: str) -> tuple[int, float] | bool | None:
        """One attempt: (token, validity deadline on the monotonic clock) when a majority
        granted; False when one had been granted since our read (try again at once); None
        when the name is held."""
        started = time.monotonic()
        floor = self.floor(name)
        ttl_ms = int(self.ttl * 1000)
        granted, overtaken = 0, False
        for server in self.servers:
            try:
                answer = int(
                    server.eval(GRANT, 2, self.key(name), self.counter(name), value, ttl_ms, floor)
                )
            except redis.RedisError:
                continue
            granted += answer == floor + 1
            overtaken |= answer == -2
        drift = self.ttl * CLOCK_DRIFT_FACTOR + 0.002
        valid_until = started + self.ttl - drift
        if granted >= self.quorum and time.monotonic() < valid_until:
            return floor + 1, valid_until
        self.release(name, value)  # a minority grant, or too late: undo it everywhere
        return False if overtaken else None

    def release(self, name: str, value: str) -> None:
        for server in self.servers:
            try:
                server.eval(RELEASE, 1, self.key(name), value)
            except redis.RedisError as exc:
                log.warning("redlock release of %s on %s failed (%s)", name, server, exc)

    def healthy(self) -> bool:
        up = 0
        for server in self.servers:
            with contextlib.suppress(redis.RedisError):
                up += bool(server.ping())
        return up >= self.quorum

    def close(self) -> None:
        for server in self.servers:
            server.close()


class RedLockClaim(SequentialClaim):
    def __init__(self, locks: RedLocks, names: list[str]) -> None:
        super().__init__(names)
        self.locks = locks
        self.value = uuid.uuid4().hex
        self.valid_until: dict[str, float] = {}

    def take(self, name: str, timeout: float) -> tuple[int | None, str] | None:
        deadline = time.monotonic() + timeout
        while True:
            granted = self.locks.try_grant(name, self.value)
            if isinstance(granted, tuple):
                token, self.valid_until[name] = granted
                return token, f"{self.locks.key(name)} on a majority of {len(self.locks.urls)}"
            if time.monotonic() >= deadline:
                return None
            if granted is None:  # held: wait a little, with jitter so retries do not collide
                time.sleep(self.locks.poll_interval * (0.5 + random.random()))

    def give_back(self, name: str) -> None:
        if self.valid_until.pop(name, None) is not None:
            self.locks.release(name, self.value)

    def still_held(self) -> bool:
        now = time.monotonic()
        return all(now < until for until in self.valid_until.values())
