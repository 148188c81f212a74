"""Fault injection for the demonstrations and tests. Off unless FAULT_INJECTION=true: then
`PUT /faults/{point}` arms a fault for the next N requests, in Redis, so every gunicorn worker
sees it. With injection off, the hooks are no-ops that touch nothing.

Points, where they fire, and what they do:
- delay_before_deduct: after the pre-filter and flow check, before the lock: sleep `value` s
  (slow-stock: the caller times out while the first attempt still runs).
- delay_after_commit: after the commit, before the answer: sleep `value` s (lost-response:
  the work is done but the caller never hears of it).
- stop_after_read: after reading the levels under the lock, the worker stops itself with
  SIGSTOP (stale-holder: a long pause; someone else sends SIGCONT).
- kill_in_transaction: inside the deduction's transaction, before commit, the worker kills
  itself with SIGKILL (crash-mid-deduction).
- pair_after_read: after the read, two deductions meet before either writes: the first to come
  waits (at most `value` s) for a second. Without a lock or a fence both then write the level
  they read less their own sale: one lost update per pair, every time, so the baselines show
  what the lock and the fence prevent in every run instead of when the timing happens to.
- reconciler_stop_before_write: the elected reconciler, inside its pass (after asking whether
  it still leads), stops itself with SIGSTOP before settling an order (demo standby).
The pid of a worker that stops or kills itself is left in Redis for the demo to find.
"""

from __future__ import annotations

import logging
import os
import signal
import time

import redis

log = logging.getLogger(__name__)

POINTS = (
    "delay_before_deduct",
    "delay_after_commit",
    "stop_after_read",
    "kill_in_transaction",
    "reconciler_stop_before_write",
    "pair_after_read",
)
PREFIX = "inventory:fault:"
LAST_PID = PREFIX + "last_pid"
PAIRS = PREFIX + "pairs"  # how many deductions have come to pair_after_read

# Take one firing of an armed fault atomically: several workers may race for it.
TAKE = """
local left = tonumber(redis.call('get', KEYS[1]) or '0')
if left <= 0 then return false end
redis.call('decr', KEYS[1])
return redis.call('get', KEYS[2]) or '0'
"""


class Faults:
    def __init__(self, client: redis.Redis | None) -> None:
        self.redis = client  # None: injection is off

    @property
    def enabled(self) -> bool:
        return self.redis is not None

    def arm(self, point: str, value: float, times: int) -> None:
        assert self.redis is not None
        self.redis.set(PREFIX + point + ":value", value)
        self.redis.set(PREFIX + point + ":times", times)

    def take(self, point: str) -> float | None:
        """One firing of the fault at `point`, if one is armed. Fails open: with Redis down a
        fault is simply not taken, so a request meets Redis's own 503 where it asks Redis,
        not an error of the test harness in the middle of a deduction."""
        if self.redis is None:
            return None
        try:
            value = self.redis.eval(TAKE, 2, PREFIX + point + ":times", PREFIX + point + ":value")
        except redis.RedisError as exc:
            log.warning("fault point %s not consulted (redis: %s)", point, exc)
            return None
        if value is None:
            return None
        log.warning("fault injected: %s (%s)", point, value)
        return float(value)

    def fire(self, point: str) -> None:
        """Act out the fault at `point`, if one is armed."""
        value = self.take(point)
        if value is None:
            return
        if point.startswith("delay"):
            time.sleep(value)
        elif point in ("stop_after_read", "reconciler_stop_before_write"):
            self._leave_pid()
            self._signal_self(signal.SIGSTOP)
        elif point == "kill_in_transaction":
            self._leave_pid()
            self._signal_self(signal.SIGKILL)
        elif point == "pair_after_read":
            self._pair(value)

    def _pair(self, patience: float) -> None:
        """Meet one other deduction here: an odd arrival waits for the next one (at most
        `patience` seconds), an even one goes on at once, its partner a poll later."""
        assert self.redis is not None
        arrived = int(self.redis.incr(PAIRS))
        if arrived % 2 == 0:
            return
        deadline = time.monotonic() + patience
        while time.monotonic() < deadline and int(self.redis.get(PAIRS) or 0) <= arrived:
            time.sleep(0.002)

    @staticmethod
    def _signal_self(sig: signal.Signals) -> None:
        """A signal sent to oneself takes effect a little later, not at the call: measured,
        the thread ran on into the next transaction (holding SQLite's write lock) before the
        process stopped. Sleeping here keeps it at the fault point until the signal lands;
        after SIGCONT the sleep ends and it carries on from exactly here."""
        os.kill(os.getpid(), sig)
        time.sleep(0.5)

    def _leave_pid(self) -> None:
        assert self.redis is not None
        self.redis.set(LAST_PID, os.getpid(), ex=600)


NO_FAULTS = Faults(None)
