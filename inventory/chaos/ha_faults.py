"""The nemesis's faults on the replicated parts (no single point of failure): the PostgreSQL
primary killed or cut off from ZooKeeper, its synchronous standby killed, the Redis primary
killed or every Redis node at once, the load balancer that holds the shared address killed, and
the intruder. Each an inject and its heal, as nemesis.py registers them; each heal waits until
the part is replicated again, so the next fault starts from a whole cluster, and says how long
the part took to come back.

A host "killed" is every program on it SIGKILLed at once (Patroni and its PostgreSQL, haproxy
and keepalived): the machine's death, not a tidy stop.
"""

from __future__ import annotations

import random
import re
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inventory.chaos import intruder
from inventory.cluster import balancers, netns, pg_ha, redis_ha, topology
from inventory.cluster.deploy import ClusterState
from inventory.local.servers import wait_until

ZK_ADDRESSES = [h.address for h in topology.by_role("zookeeper")]


class _Watch:
    """Notes when a condition first holds after a fault (a new primary, the address moved)."""

    def __init__(self, what: Callable[[], str | None], before: str | None) -> None:
        self.started = time.monotonic()
        self.seen: tuple[str, float] | None = None
        self._stop = threading.Event()

        def watch() -> None:
            while not self._stop.wait(0.2):
                now = what()
                if now is not None and now != before:
                    self.seen = (now, time.monotonic() - self.started)
                    return

        threading.Thread(target=watch, daemon=True).start()

    def stop(self) -> str:
        self._stop.set()
        return (
            f"{self.seen[0]} took over after {self.seen[1]:.1f} s" if self.seen else "no takeover"
        )

    @property
    def took(self) -> float | None:
        return self.seen[1] if self.seen else None


_down: list[str] = []  # hosts whose programs a fault killed, to restart at the heal
_cut: list[str] = []
_unlinked: list[str] = []  # namespaces whose link a killed load balancer took down
_watches: list[_Watch] = []
attempts: list[dict[str, Any]] = []  # the intruder's, for the run's verdict and report
# The last heal's figures, for the report's row: seconds from the fault to the takeover (None:
# none), and from the heal until the part was replicated again. Taken (and cleared) by the run.
timing: dict[str, float | None] = {}


def _kill_host(state: ClusterState, host: str) -> None:
    for proc in state.on_host(host):
        proc.kill()
    _down.append(host)


def _restart_hosts(state: ClusterState) -> list[str]:
    started = []
    while _down:
        host = _down.pop()
        for proc in state.on_host(host):
            if not proc.alive():
                proc.start(Path(state.home))
        started.append(host)
    state.save()
    return started


def _primary_name() -> str | None:
    found = pg_ha.primary()
    return found.name if found else None


def _back_together(
    state: ClusterState, restarted: list[str], part: str, ready: Callable[[], bool]
) -> str:
    healed = time.monotonic()
    wait_until(ready, 120, f"{part} replicated again after the heal", interval=0.5)
    replicated = time.monotonic() - healed
    watch = _watches.pop() if _watches else None
    takeover = watch.stop() if watch else "no takeover"
    timing.update(takeover_s=watch.took if watch else None, replicated_s=round(replicated, 1))
    return (
        f"{takeover}; {', '.join(restarted) or 'nothing'} restarted, {part} replicated again "
        f"{replicated:.1f} s after the heal"
    )


# --- PostgreSQL ---------------------------------------------------------------------------------


def kill_pg_primary(state: ClusterState, rng: random.Random) -> str:
    primary = _primary_name()
    if primary is None:
        return "no PostgreSQL primary to kill"
    _watches.append(_Watch(_primary_name, primary))
    _kill_host(state, primary)
    return f"PostgreSQL primary {primary} killed (Patroni and PostgreSQL, SIGKILL)"


def kill_pg_replica(state: ClusterState, rng: random.Random) -> str:
    primary = _primary_name()
    standby = next((h.name for h in topology.by_role("postgres") if h.name != primary), None)
    if standby is None:
        return "no PostgreSQL standby to kill"
    _watches.append(_Watch(_primary_name, primary))  # there must be no takeover
    _kill_host(state, standby)
    return f"PostgreSQL synchronous standby {standby} killed"


def cut_pg_primary_from_zk(state: ClusterState, rng: random.Random) -> str:
    primary = _primary_name()
    if primary is None:
        return "no PostgreSQL primary to cut off"
    _watches.append(_Watch(_primary_name, primary))
    netns.cut_from(topology.host(primary).namespace, ZK_ADDRESSES)
    _cut.append(primary)
    return f"PostgreSQL primary {primary} cut off from zk1-3 (its standby still reachable)"


def heal_pg(state: ClusterState) -> str:
    while _cut:
        netns.heal(topology.host(_cut.pop()).namespace)
    restarted = _restart_hosts(state)
    return _back_together(state, restarted, "PostgreSQL", pg_ha.replicated)


# --- Redis ----------------------------------------------------------------------------------------


def kill_redis_primary(state: ClusterState, rng: random.Random) -> str:
    secrets = state.secrets
    primary = redis_ha.primary(secrets)
    if primary is None:
        return "no Redis primary to kill"

    def named() -> str | None:
        found = redis_ha.primary(secrets)
        return found.name if found else None

    _watches.append(_Watch(named, primary.name))
    _kill_host(state, primary.name)
    return f"Redis primary {primary.name} killed; the sentinels must promote its replica"


def restart_all_redis(state: ClusterState, rng: random.Random) -> str:
    """Every Redis node killed at once, as a power cut of the rack would: replication keeps no
    copy then, only each node's append-only file does (redis_ha.PERSISTENCE). The heal starts
    them again on it: the stream of stock events, its consumer group and the flags must be
    back, and the sentinels find the same primary."""
    secrets = state.secrets
    before = redis_ha.primary(secrets)
    nodes = [h.name for h in topology.by_role("redis")]
    for name in nodes:
        for proc in state.on_host(name):
            proc.signal(signal.SIGKILL)  # all first, then wait: at once, not one after another
    for name in nodes:
        _kill_host(state, name)  # waits until each is dead, and marks it for the heal
    for sentinel in _sentinel_logs(state):
        _sentinel_offsets[sentinel] = sentinel.stat().st_size if sentinel.exists() else 0
    was = f" (the primary was {before.name})" if before else ""
    return f"every Redis node killed at once (SIGKILL: {', '.join(nodes)}){was}"


def heal_redis(state: ClusterState) -> str:
    restarted = _restart_hosts(state)
    secrets = state.secrets
    return _back_together(state, restarted, "Redis", lambda: redis_ha.replicated(secrets))


# With every node down the sentinels still vote a failover, find no replica to promote and
# abort it; Sentinel then starts no failover of that primary for twice its failover-timeout
# (20 s here), and logs until when. A primary that dies within that time stays dead until it
# is restarted: the first run of restart-all-redis followed by kill-redis-primary saw no
# takeover, Redis down the whole 8 s. The cluster is not whole again until a failover can
# happen, so the heal waits for the latest such time the sentinels logged.
_NEXT_FAILOVER = re.compile(r"I will not start a failover before (\w{3} \w{3} +\d+ [\d:]+ \d{4})")
_sentinel_offsets: dict[Path, int] = {}


def _sentinel_logs(state: ClusterState) -> list[Path]:
    return [Path(p.log) for n, p in state.procs.items() if n.startswith("s-")]  # nodes.sentinel


def failover_blocked_until(logs: dict[Path, str]) -> float | None:
    """The latest time (epoch seconds, the sentinels log local time) before which a sentinel
    said it would start no failover, in the log text each wrote since the fault; None: none."""
    found = [
        time.mktime(time.strptime(m, "%a %b %d %H:%M:%S %Y"))
        for text in logs.values()
        for m in _NEXT_FAILOVER.findall(text)
    ]
    return max(found, default=None)


def heal_all_redis(state: ClusterState) -> str:
    said = heal_redis(state)
    logs = {}
    for path, offset in _sentinel_offsets.items():
        with open(path, "rb") as f:
            f.seek(offset)
            logs[path] = f.read().decode(errors="replace")
    _sentinel_offsets.clear()
    until = failover_blocked_until(logs)
    if until is None:
        return said + "; the sentinels tried no failover"
    waited = max(0.0, until + 1 - time.time())  # the log's time has whole seconds
    time.sleep(waited)
    return said + f"; waited {waited:.1f} s more until the sentinels may fail over again"


# --- the load balancers ---------------------------------------------------------------------------


def kill_lb(state: ClusterState, rng: random.Random) -> str:
    holder = balancers.vip_holder()
    if holder is None:
        return f"no load balancer holds {topology.VIP}"
    _watches.append(_Watch(balancers.vip_holder, holder))
    _kill_host(state, holder)
    # A dead machine's addresses die with it. Killing its programs alone would leave the
    # shared address configured in its namespace (keepalived SIGKILLed cannot take it down),
    # answering ARP for a port nobody listens on: not a fault a real host makes. So its link
    # goes down and the address is dropped, as the machine's death would.
    namespace = topology.host(holder).namespace
    netns.run(["ip", "-n", namespace, "addr", "del", f"{topology.VIP}/24", "dev", "eth0"], False)
    netns.run(["ip", "-n", namespace, "link", "set", "eth0", "down"])
    _unlinked.append(namespace)
    return (
        f"load balancer {holder} (holding {topology.VIP}) killed: haproxy and keepalived, "
        "its link down"
    )


def heal_lb(state: ClusterState) -> str:
    while _unlinked:
        netns.run(["ip", "-n", _unlinked.pop(), "link", "set", "eth0", "up"])
    restarted = _restart_hosts(state)
    return _back_together(
        state, restarted, "the load balancers", lambda: balancers.vip_holder() is not None
    )


# --- the intruder ---------------------------------------------------------------------------------


def intrude(state: ClusterState, rng: random.Random) -> str:
    found = intruder.break_in(state)
    attempts.extend(found)
    return "the intruder and an order replica's credentials: " + intruder.describe(found)


def forget() -> None:
    """After the run or a crash of it: links brought back up; the rest is restarted by the
    caller."""
    _down.clear()
    while _unlinked:
        netns.run(["ip", "-n", _unlinked.pop(), "link", "set", "eth0", "up"], check=False)
    _cut.clear()
    _sentinel_offsets.clear()
    timing.clear()
    while _watches:
        _watches.pop().stop()
