"""The nemesis: faults that really happen to the cluster's hosts and programs, each named, each
with its heal. Nothing is simulated: a cut is an nft drop inside the host, a pause is SIGSTOP,
a crash is SIGKILL. A fault the machine cannot make (delay and reordering need the netem qdisc,
which this kernel may lack) is reported as not available, never faked.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from inventory.chaos import (
    ha_faults,
    slow_attempts,
    stalled_lock,
    stock_faults,
    zookeeper_faults,
)
from inventory.chaos.processes import kill_replica, restart
from inventory.chaos.webhooks import subscriber
from inventory.chaos.workload import SCARCE
from inventory.cluster import netns, nodes, pg_ha, redis_ha, topology
from inventory.cluster.deploy import ClusterState
from inventory.local.servers import wait_until

SESSION = float(topology.SERVICE_SETTINGS["ZK_SESSION_TIMEOUT"])


@dataclass(frozen=True)
class Fault:
    name: str
    what: str
    hold: float  # seconds between inject and heal
    inject: Callable[[ClusterState, random.Random], str]  # returns what it did, for the report
    heal: Callable[[ClusterState], str | None]  # returns what it saw, if worth a note
    # What the buyers order while it holds (workload.py: SCARCE), None: the run's own mix
    demand: str | None = None
    # Settings the stock replicas need for it (the run starts them so, for that run only)
    stock_settings: Mapping[str, str] = field(default_factory=dict)


def _ns(name: str) -> str:
    return topology.host(name).namespace


FAULTS: dict[str, Fault] = {
    f.name: f
    for f in (
        Fault(
            "zk-cut-stock",
            "a stock replica cut off from ZooKeeper past the session "
            "timeout: the real stale holder",
            2 * SESSION,
            stock_faults.cut_stock_from_zk,
            stock_faults.heal_stock_network,
        ),
        Fault(
            "pause-stock-worker",
            "a stock worker paused (SIGSTOP) past the session timeout",
            2 * SESSION,
            stock_faults.pause_stock_worker,
            stock_faults.resume_paused,
        ),
        Fault(
            "stall-lock-holder",
            f"a hot goods id's lock taken by a client of the run's own (the stock service's "
            f"recipe and identity) and held {stalled_lock.STALL:g} s: its batches' other "
            "members must not wait for it (ST)",
            stalled_lock.STALL,
            stalled_lock.inject,
            stalled_lock.heal,
        ),
        Fault(
            "kill-stock-workers",
            "a stock replica's workers SIGKILLed",
            2.0,
            stock_faults.kill_stock_workers,
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
            zookeeper_faults.kill_zk_leader,
            zookeeper_faults.restart_zk,
        ),
        Fault(
            "zk-partition-minority",
            "the ZooKeeper leader partitioned from the followers",
            10.0,
            zookeeper_faults.partition_zk(majority=False),
            zookeeper_faults.heal_zk_partition,
        ),
        Fault(
            "zk-partition-majority",
            "two of three ZooKeeper members partitioned: no quorum",
            10.0,
            zookeeper_faults.partition_zk(majority=True),
            zookeeper_faults.heal_zk_partition,
        ),
        Fault(
            "kill-redis-primary",
            "the Redis primary killed: the sentinels promote its replica (flags not yet "
            "replicated are lost); restarted after 8 s, it rejoins as a replica",
            8.0,
            ha_faults.kill_redis_primary,
            ha_faults.heal_redis,
        ),
        Fault(
            "restart-all-redis",
            "every Redis node killed at once (SIGKILL), restarted after 3 s on its append-only "
            "file: the stream of stock events, its consumer group and the flags come back",
            3.0,
            ha_faults.restart_all_redis,
            ha_faults.heal_all_redis,
        ),
        Fault(
            "kill-pg-primary",
            "the PostgreSQL primary's host killed (Patroni and PostgreSQL): Patroni promotes "
            "the synchronous standby; restarted after 15 s, it rejoins as the standby",
            15.0,
            ha_faults.kill_pg_primary,
            ha_faults.heal_pg,
        ),
        Fault(
            "cut-pg-primary-from-zk",
            "the PostgreSQL primary cut off from the ZooKeeper ensemble, its standby still "
            "reachable",
            15.0,
            ha_faults.cut_pg_primary_from_zk,
            ha_faults.heal_pg,
        ),
        Fault(
            "kill-pg-replica",
            "the synchronous PostgreSQL standby killed; restarted after 8 s",
            8.0,
            ha_faults.kill_pg_replica,
            ha_faults.heal_pg,
        ),
        Fault(
            "kill-lb",
            "the load balancer holding the shared address killed (haproxy, keepalived, its "
            "link): the other takes the address over; restarted after 5 s",
            5.0,
            ha_faults.kill_lb,
            ha_faults.heal_lb,
        ),
        Fault(
            "intruder",
            "a host with no credential, and an order replica's credentials, try to break in",
            1.0,
            ha_faults.intrude,
            lambda state: None,
        ),
        Fault(
            "packet-loss",
            "20% packet loss on a stock replica's link",
            10.0,
            stock_faults.lose_packets,
            stock_faults.heal_stock_network,
        ),
        Fault(
            "kill-order-replica",
            "an order replica killed mid-request, restarted after 3 s",
            3.0,
            kill_replica("order1"),
            restart("order1"),
        ),
        Fault(
            "kill-reconciler-leader",
            "the elected reconciler that leads killed (SIGKILL), restarted after 10 s",
            10.0,
            zookeeper_faults.kill_reconciler_leader,
            zookeeper_faults.restart_reconcilers,
        ),
        Fault(
            "kill-relay-leader",
            "the elected relay of the stock events that leads killed (SIGKILL), restarted "
            "after 6 s",
            6.0,
            zookeeper_faults.kill_relay_leader,
            zookeeper_faults.restart_relays,
        ),
        Fault(
            "zk-rolling-restart",
            "every ZooKeeper member restarted in turn under the reconcilers and the locks",
            2.0,
            zookeeper_faults.restart_zk_followers,
            zookeeper_faults.restart_zk_leader_last,
        ),
        Fault(
            "slow-first-attempts",
            f"first reduceStock attempts held {slow_attempts.DELAY:g} s between the Redis "
            "check and the lock (FAULT_INJECTION on the stock replicas, for the run), the "
            "scarce goods emptied: retried and refused meanwhile, then the shelf stocked again",
            slow_attempts.HOLD,
            slow_attempts.inject,
            slow_attempts.heal,
            demand=SCARCE,
            stock_settings=slow_attempts.STOCK_SETTINGS,
        ),
        Fault(
            "kill-webhook-receiver",
            "the run's receiver of webhooks killed (SIGKILL), restarted after 3 s on its log: "
            "the deliverer retries, W1 judges what the receiver got",
            3.0,
            subscriber.kill_receiver,
            subscriber.restart_receiver,
        ),
    )
}
QUICK = (
    # First, right after the fault-free baseline ST compares it with, before any other fault
    # has left the cluster anything to settle
    "stall-lock-holder",
    "zk-cut-stock",
    "pause-stock-worker",
    "kill-zk-leader",
    "kill-redis-primary",
    "kill-pg-primary",
    "kill-order-replica",  # leaves orders PENDING mid-request: the reconcilers must settle them
    "kill-reconciler-leader",
    "kill-relay-leader",  # the stock events' relay fails over: I10 judges what the consumer got
    "slow-first-attempts",  # a refusal, then stock back, then the late attempt: refused too
    "kill-webhook-receiver",  # deliveries fail, then retried: W1 judges what it logged
    "intruder",
)


def not_available() -> dict[str, str]:
    """Faults asked for in the issue that this machine cannot make, and why."""
    if netns.netem_available(topology.host("intruder").namespace):
        return {}
    return {
        "delay / reordering": "this kernel has no netem qdisc (`tc qdisc add ... netem` fails: "
        "'Specified qdisc kind is unknown'); packet loss is made with nft instead"
    }


def heal_everything(state: ClusterState) -> None:
    """After the schedule or a crash of the run: no rule, pause or dead program left."""
    stock_faults.resume_paused(state)
    for h in topology.HOSTS:
        netns.heal(h.namespace)
    zookeeper_faults.forget()
    ha_faults.forget()
    slow_attempts.forget()
    stalled_lock.forget()
    for proc in state.procs.values():
        if not proc.alive():
            proc.start(Path(state.home))
    state.save()
    wait_until(nodes.ensemble_ready, 90, "ZooKeeper ensemble", interval=0.25)
    wait_until(pg_ha.replicated, 120, "PostgreSQL replicated", interval=0.5)
    secrets = state.secrets
    wait_until(lambda: redis_ha.replicated(secrets), 60, "Redis replicated", interval=0.5)


def sleep_until(deadline: float) -> None:
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(left, 0.2))
