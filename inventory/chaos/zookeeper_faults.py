"""The nemesis's faults on the coordination side: the ZooKeeper ensemble (its leader killed,
partitions with and without a quorum, every member restarted in turn) and the elected
singletons on it (the reconcilers' and the stock events relays' leader killed). Each an inject
and its heal, as nemesis.py registers them."""

from __future__ import annotations

import random
from collections.abc import Callable

from inventory.chaos.processes import restart
from inventory.cluster import netns, nodes, topology
from inventory.cluster.deploy import ClusterState
from inventory.local.servers import wait_until


def _ns(name: str) -> str:
    return topology.host(name).namespace


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


def kill_reconciler_leader(state: ClusterState, rng: random.Random) -> str:
    """SIGKILL to the elected reconciler that leads: no resignation; its node goes with its
    session, and a standby on the other order host takes over."""
    return _kill_leader(state, "reconciler", nodes.reconciler_leader(), topology.RECONCILERS)


def kill_relay_leader(state: ClusterState, rng: random.Random) -> str:
    """SIGKILL to the relay of the stock events that leads, between or inside its rounds: what
    it published and had not marked sent is sent again by the standby (repeats, no loss)."""
    return _kill_leader(state, "relay", nodes.relay_leader(), topology.RELAYS)


def _kill_leader(state: ClusterState, what: str, leader: str | None, where: dict[str, str]) -> str:
    if leader is None or leader not in state.procs:
        return f"no {what} leader to kill"
    state.proc(leader).kill()
    _killed_singletons.append(leader)
    return f"{what} leader {leader} (on {where[leader]}) killed"


_killed_singletons: list[str] = []


def restart_reconcilers(state: ClusterState) -> str | None:
    return _restart_singletons(state, nodes.reconciler_leader)


def restart_relays(state: ClusterState) -> str | None:
    return _restart_singletons(state, nodes.relay_leader)


def _restart_singletons(state: ClusterState, leader: Callable[[], str | None]) -> str | None:
    names = list(_killed_singletons)
    while _killed_singletons:
        restart(_killed_singletons.pop())(state)
    return f"{', '.join(names)} restarted; leading now: {leader()}" if names else None


def _restart_member(state: ClusterState, name: str) -> None:
    """One ZooKeeper member killed and started again on its data; until the ensemble has a
    leader and every member serves again."""
    state.proc(name).kill()
    restart(name)(state)
    wait_until(nodes.ensemble_ready, 60, f"the ensemble after restarting {name}", interval=0.2)


def restart_zk_followers(state: ClusterState, rng: random.Random) -> str:
    """A rolling restart of the ensemble under everything that holds a session on it (locks,
    the reconcilers' election): the followers first, one at a time (the heal restarts the
    leader). Each restart drops the clients connected to that member, which reconnect to
    another member on the same session."""
    leader = nodes.zk_leader()
    followers = [h.name for h in topology.by_role("zookeeper") if h.name != leader]
    for name in followers:
        _restart_member(state, name)
    _rolling.append(leader or followers[0])
    return f"ZooKeeper followers {', '.join(followers)} restarted one at a time"


_rolling: list[str] = []


def restart_zk_leader_last(state: ClusterState) -> str | None:
    done = []
    while _rolling:
        name = _rolling.pop()
        if name is not None:
            _restart_member(state, name)
            done.append(name)
    return f"the leader {', '.join(done)} restarted last; leader now {nodes.zk_leader()}"


def forget() -> None:
    """After everything was healed: no fault of these is pending."""
    _partitioned.clear()
    _killed_zk.clear()
    _killed_singletons.clear()
    _rolling.clear()
