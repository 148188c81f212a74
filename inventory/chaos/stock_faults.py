"""The nemesis's faults on the stock replicas: one cut off from ZooKeeper, a worker paused inside
its write transaction (the stale holder fencing exists for), a replica's workers killed, packets
lost on its link. Each an inject and its heal, as nemesis.py registers them."""

from __future__ import annotations

import contextlib
import os
import random
import signal

from inventory.chaos import targets
from inventory.cluster import netns, topology
from inventory.cluster.deploy import ClusterState

ZK_ADDRESSES = [h.address for h in topology.by_role("zookeeper")]


def _ns(name: str) -> str:
    return topology.host(name).namespace


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
    caught = targets.pause_writer(state, 3.0)
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
        waiting = targets.resume(state, caught)
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


def lose_packets(state: ClusterState, rng: random.Random) -> str:
    netns.lose_packets(_ns("stock1"), 20)
    return "20% of stock1's packets dropped at random, both ways (nft numgen)"


def _kill(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
