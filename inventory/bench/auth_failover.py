"""`inventory bench --auth`: the pools' reconnection after a Sentinel failover, timed.

On servers of the bench's own (auth_sentinels.py: a primary, its replica and three sentinels,
TLS only, the cluster's failover settings), a client made as the services make theirs
(shared.redis_client.make_redis with a rediss+sentinel:// URL) is shared by `threads` threads,
each doing SET + DEL in a loop, so its pool holds about that many connections. The primary is
killed (SIGKILL: no goodbye, as a host lost); the measure is the time until the sentinels switch
to the replica (the first `+switch-master` any of them publishes), until the first command
succeeds again, until every thread's has, and the client's CPU over it, both with the shared
TLS context (shared/redis_tls.py) and with redis-py's own connection class, which builds a
context for every connection: what every pool paid again after each failover before it.

A thread pauses 10 ms after a failed command, as a caller retrying would, rather than spin:
the CPU of the wait (the sentinels asked for the primary, connections refused, redis-py's own
retries) is then the same on both sides, and the difference is the reconnections."""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis
from redis.sentinel import SentinelManagedSSLConnection

from inventory.bench.auth_sentinels import Sentinels, own_sentinels
from inventory.cluster import tls
from inventory.local.servers import pid_alive, wait_until
from shared.redis_client import make_redis

THREADS = 8
PAUSE = 0.01  # after a failed command
TIMEOUT = 60.0  # from the kill until every thread is back; failover-timeout is 10 s
SHARED, OWN = "one per process (shared/redis_tls.py)", "one per connection (redis-py's)"


@dataclass
class Failover:
    context: str  # SHARED or OWN
    threads: int
    connections: int  # the pool's before the kill
    promoted_s: float | None  # kill -> the first +switch-master
    first_s: float | None  # kill -> the first command that succeeded again
    all_s: float | None  # kill -> every thread's
    cpu_ms: float | None  # the process's CPU, kill -> every thread back
    burst_cpu_ms: float | None  # the process's CPU, +switch-master -> every thread back
    # The mean thread CPU of a thread's first SET + DEL back: the connections they took made
    # anew (one each, SET's and DEL's may differ), TLS handshakes included.
    first_command_cpu_ms: float | None
    failures: int  # failed commands after the kill, every thread


@dataclass
class _Clock:
    """What the threads record, under `guard`."""

    threads: int
    guard: threading.Lock = field(default_factory=threading.Lock)
    killed: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)
    all_back: threading.Event = field(default_factory=threading.Event)
    warm: set[int] = field(default_factory=set)  # threads with a success before the kill
    watching: set[int] = field(default_factory=set)  # sentinels' ports subscribed to
    back: dict[int, float] = field(default_factory=dict)  # thread -> perf_counter
    first_cpu: list[float] = field(default_factory=list)  # thread CPU of each first command
    switched: tuple[float, float] | None = None  # (perf_counter, process_time)
    all_back_cpu: float | None = None
    failures: int = 0


def _work(client: redis.Redis, me: int, clock: _Clock) -> None:
    key = f"bench-failover-{me}"
    while not clock.stop.is_set():
        after_kill = clock.killed.is_set()
        cpu = time.thread_time()
        try:
            client.set(key, "orderId")
            client.delete(key)
        except redis.RedisError:
            if after_kill:
                with clock.guard:
                    clock.failures += 1
            time.sleep(PAUSE)
            continue
        now, spent = time.perf_counter(), time.thread_time() - cpu
        with clock.guard:
            if not after_kill:
                clock.warm.add(me)
            elif me not in clock.back:
                clock.back[me] = now
                clock.first_cpu.append(spent)
                if len(clock.back) == clock.threads:
                    clock.all_back_cpu = time.process_time()
                    clock.all_back.set()


def _watch(setup: Sentinels, port: int, clock: _Clock) -> None:
    """The first +switch-master of this sentinel (a blocking read: no CPU while it waits)."""
    subscriber = setup.client(port).pubsub()
    try:
        subscriber.subscribe("+switch-master")
        subscriber.get_message(timeout=5)  # the subscription confirmed
        with clock.guard:
            clock.watching.add(port)
        while not clock.stop.is_set():
            message = subscriber.get_message(ignore_subscribe_messages=True, timeout=0.5)
            if message and message["type"] == "message":
                with clock.guard:
                    if clock.switched is None:
                        clock.switched = (time.perf_counter(), time.process_time())
                return
    except redis.RedisError:
        return
    finally:
        subscriber.close()


def time_failover(setup: Sentinels, shared: bool, threads: int = THREADS) -> Failover:
    client = make_redis(setup.url)
    if not shared:
        # What make_redis built before shared/redis_tls.py: redis-py's own class for
        # rediss+sentinel://, everything else the same (set before any connection exists).
        client.connection_pool.connection_class = SentinelManagedSSLConnection
    clock = _Clock(threads)
    running = [
        threading.Thread(target=_work, args=(client, i, clock), daemon=True) for i in range(threads)
    ] + [
        threading.Thread(target=_watch, args=(setup, s.port, clock), daemon=True)
        for s in setup.sentinels
    ]
    try:
        for thread in running:
            thread.start()
        wait_until(lambda: len(clock.warm) == threads, 30, "every thread's first command")
        wait_until(lambda: len(clock.watching) == len(setup.sentinels), 10, "the watchers")
        time.sleep(0.5)  # the pool at its working size
        # redis-py's count of the connections its pool made (a private attribute: 0 if gone).
        connections = int(getattr(client.connection_pool, "_created_connections", 0))
        cpu, killed_at = time.process_time(), time.perf_counter()
        os.kill(setup.primary.pid, signal.SIGKILL)
        wait_until(lambda: not pid_alive(setup.primary.pid), 10, "the killed primary gone")
        clock.killed.set()
        clock.all_back.wait(TIMEOUT)
        with clock.guard:
            switched, back, first_cpu = clock.switched, dict(clock.back), list(clock.first_cpu)
            all_back_cpu, failures = clock.all_back_cpu, clock.failures
    finally:
        clock.stop.set()
        for thread in running:
            thread.join(10)
        client.close()

    def since_kill(t: float | None) -> float | None:
        return None if t is None else t - killed_at

    def ms(seconds: float | None) -> float | None:
        return None if seconds is None else seconds * 1000

    return Failover(
        SHARED if shared else OWN,
        threads,
        connections,
        since_kill(switched[0] if switched else None),
        since_kill(min(back.values(), default=None)),
        since_kill(max(back.values())) if len(back) == threads else None,
        ms(all_back_cpu - cpu if all_back_cpu is not None else None),
        ms(all_back_cpu - switched[1] if all_back_cpu is not None and switched else None),
        ms(sum(first_cpu) / len(first_cpu) if first_cpu else None),
        failures,
    )


def failovers(folder: Path, threads: int = THREADS) -> list[Failover]:
    """The failover twice, on fresh servers each time: redis-py's context per connection, then
    the shared one."""
    tls.make_server(folder, tls.REDIS_STEM, ["127.0.0.1"])
    ca = str(folder / tls.FOLDER / tls.CA)
    out = []
    for shared in (False, True):
        with own_sentinels(folder / ("shared" if shared else "own"), ca) as setup:
            out.append(time_failover(setup, shared, threads))
    return out
