"""The nemesis: faults that really happen to the cluster's hosts and programs, each named, each
with its heal. Nothing is simulated: a cut is an nft drop inside the host, a pause is SIGSTOP,
a crash is SIGKILL. A fault the machine cannot make (delay and reordering need the netem qdisc,
which this kernel may lack) is reported as not available, never faked.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from inventory.chaos import targets
from inventory.cluster import netns, nodes, topology
from inventory.cluster.deploy import ClusterState
from inventory.servers import wait_until

SESSION = float(topology.SERVICE_SETTINGS["ZK_SESSION_TIMEOUT"])
ZK_ADDRESSES = [h.address for h in topology.by_role("zookeeper")]


@dataclass(frozen=True)
class Fault:
    name: str
    what: str
    hold: float  # seconds between inject and heal
    inject: Callable[[ClusterState, random.Random], str]  # returns what it did, for the report
    heal: Callable[[ClusterState], str | None]  # returns what it saw, if worth a note


def _ns(name: str) -> str:
    return topology.host(name).namespace


# --- the faults -------------------------------------------------------------------------------


def cut_stock_from_zk(state: ClusterState, rng: random.Random) -> str:
    netns.cut_from(_ns("stock1"), ZK_ADDRESSES)
    return "stock1 cut from zk1-3 (the database and Redis still reachable)"


def heal_stock_network(state: ClusterState) -> None:
    netns.heal(_ns("stock1"))


def pause_stock_worker(state: ClusterState, rng: random.Random) -> str:
    """SIGSTOP to a stock worker caught inside its write transaction, holding rows it has
    written and not committed (found and verified by targets.pause_writer): the paused holder
    that fencing exists for. If none is caught within 3 s, a worker at random, and the report
    says so."""
    caught = targets.pause_writer(3.0)
    if caught is not None:
        _paused.append(caught)
        return (
            f"SIGSTOP to {caught.replica}'s worker {caught.pid} inside its write transaction, "
            f"holding the rows of {', '.join(caught.rows)} (caught on signal {caught.attempts})"
        )
    replica = rng.choice(("stock1", "stock2"))
    workers = state.proc(replica).workers()
    if not workers:
        return f"{replica} had no worker to pause"
    pid = rng.choice(workers)
    _stopped.append(pid)
    _kill(pid, signal.SIGSTOP)
    return f"SIGSTOP to {replica}'s worker {pid} (none caught inside a write within 3 s)"


_paused: list[targets.Paused] = []
_stopped: list[int] = []


def resume_paused(state: ClusterState) -> str | None:
    notes = []
    while _paused:
        caught = _paused.pop()
        waiting = targets.resume(caught)
        waited = "1 transaction was" if waiting == 1 else f"{waiting} transactions were"
        notes.append(f"{waited} waiting for its rows when it was resumed")
    while _stopped:
        _kill(_stopped.pop(), signal.SIGCONT)
    return "; ".join(notes) or None


def kill_stock_workers(state: ClusterState, rng: random.Random) -> str:
    replica = rng.choice(("stock1", "stock2"))
    workers = state.proc(replica).workers()
    for pid in workers:
        _kill(pid, signal.SIGKILL)
    return f"SIGKILL to {replica}'s workers {workers} (gunicorn starts new ones)"


def kill_replica(name: str) -> Callable[[ClusterState, random.Random], str]:
    def inject(state: ClusterState, rng: random.Random) -> str:
        state.proc(name).kill()
        return f"{name} killed (SIGKILL to its whole process group)"

    return inject


def restart(name: str, ready: Callable[[], bool] | None = None) -> Callable[[ClusterState], None]:
    def heal(state: ClusterState) -> None:
        proc = state.proc(name)
        if not proc.alive():
            proc.start(Path(state.home))
            state.save()
        if ready is not None:
            wait_until(ready, 60, f"{name} after restart", Path(proc.log), 0.2, alive=proc.alive)

    return heal


def kill_zk_leader(state: ClusterState, rng: random.Random) -> str:
    leader = nodes.zk_leader()
    if leader is None:
        return "no ZooKeeper leader to kill"
    _killed_zk.append(leader)
    state.proc(leader).kill()
    return f"ZooKeeper leader {leader} killed"


_killed_zk: list[str] = []


def restart_zk(state: ClusterState) -> None:
    while _killed_zk:
        restart(_killed_zk.pop())(state)
    wait_until(nodes.ensemble_ready, 60, "ZooKeeper ensemble after the heal", interval=0.25)


def partition_zk(majority: bool) -> Callable[[ClusterState, random.Random], str]:
    """Minority: the leader alone on one side, the two followers (a quorum) on the other.
    Majority: two members cut off from every other member, so no side has a quorum."""

    def inject(state: ClusterState, rng: random.Random) -> str:
        names = [h.name for h in topology.by_role("zookeeper")]
        leader = nodes.zk_leader() or names[0]
        follower = next(n for n in names if n != leader)
        isolated = [leader, follower] if majority else [leader]
        for name in isolated:
            others = [topology.host(n).address for n in names if n != name]
            netns.cut_from(_ns(name), others)
        _partitioned.extend(isolated)
        return f"{', '.join(isolated)} cut off from the other ZooKeeper members"

    return inject


_partitioned: list[str] = []


def heal_zk_partition(state: ClusterState) -> None:
    while _partitioned:
        netns.heal(_ns(_partitioned.pop()))
    wait_until(nodes.ensemble_ready, 60, "ZooKeeper ensemble after the heal", interval=0.25)


def lose_packets(state: ClusterState, rng: random.Random) -> str:
    netns.lose_packets(_ns("stock1"), 20)
    return "20% of stock1's packets dropped at random, both ways (nft numgen)"


def _kill(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


FAULTS: dict[str, Fault] = {
    f.name: f
    for f in (
        Fault(
            "zk-cut-stock",
            "a stock replica cut off from ZooKeeper past the session "
            "timeout: the real stale holder",
            2 * SESSION,
            cut_stock_from_zk,
            heal_stock_network,
        ),
        Fault(
            "pause-stock-worker",
            "a stock worker paused (SIGSTOP) past the session timeout",
            2 * SESSION,
            pause_stock_worker,
            resume_paused,
        ),
        Fault(
            "kill-stock-workers",
            "a stock replica's workers SIGKILLed",
            2.0,
            kill_stock_workers,
            lambda state: None,
        ),
        Fault(
            "kill-stock-replica",
            "a whole stock replica killed, restarted after 5 s",
            5.0,
            kill_replica("stock1"),
            restart("stock1"),
        ),
        Fault(
            "kill-zk-leader",
            "the ZooKeeper leader killed, restarted after 8 s",
            8.0,
            kill_zk_leader,
            restart_zk,
        ),
        Fault(
            "zk-partition-minority",
            "the ZooKeeper leader partitioned from the followers",
            10.0,
            partition_zk(majority=False),
            heal_zk_partition,
        ),
        Fault(
            "zk-partition-majority",
            "two of three ZooKeeper members partitioned: no quorum",
            10.0,
            partition_zk(majority=True),
            heal_zk_partition,
        ),
        Fault(
            "redis-restart",
            "Redis killed and restarted empty (every flag lost)",
            1.0,
            kill_replica("redis"),
            restart("redis", nodes.redis_ready),
        ),
        Fault(
            "postgres-restart",
            "PostgreSQL killed (SIGKILL, crash recovery) and restarted",
            2.0,
            kill_replica("pg"),
            restart("pg", nodes.postgres_ready),
        ),
        Fault(
            "packet-loss",
            "20% packet loss on a stock replica's link",
            10.0,
            lose_packets,
            heal_stock_network,
        ),
        Fault(
            "kill-order-replica",
            "an order replica killed mid-request, restarted after 3 s",
            3.0,
            kill_replica("order1"),
            restart("order1"),
        ),
    )
}
QUICK = ("zk-cut-stock", "pause-stock-worker", "kill-zk-leader", "redis-restart")


def not_available() -> dict[str, str]:
    """Faults asked for in the issue that this machine cannot make, and why."""
    if netns.netem_available(topology.host("lb").namespace):
        return {}
    return {
        "delay / reordering": "this kernel has no netem qdisc (`tc qdisc add ... netem` fails: "
        "'Specified qdisc kind is unknown'); packet loss is made with nft instead"
    }


def heal_everything(state: ClusterState) -> None:
    """After the schedule or a crash of the run: no rule, pause or dead program left."""
    resume_paused(state)
    for h in topology.HOSTS:
        netns.heal(h.namespace)
    _partitioned.clear()
    _killed_zk.clear()
    for proc in state.procs.values():
        if not proc.alive():
            proc.start(Path(state.home))
    state.save()
    wait_until(nodes.ensemble_ready, 90, "ZooKeeper ensemble", interval=0.25)


def sleep_until(deadline: float) -> None:
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(left, 0.2))
