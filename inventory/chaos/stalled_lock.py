"""The `stall-lock-holder` fault: one goods id's lock taken and sat on, as a paused or slow holder
sits on it, while the buyers go on buying.

A client of the run's own (this process, in the root namespace, like the run's other ZooKeeper
readers) takes one hot goods id's lock exactly as a stock replica takes it: the stock service's
recipe (coordination/locks/zookeeper/claim.py: an ephemeral-sequential node under the goods id's
lock path, first in its queue holds it), its lock root (Settings.lock_root, `/inventory/locks`)
and its lock name (coordination.locks.lock_names: the goods id itself), logged in as the stock
service's own ZooKeeper identity (inventory/cluster/zk_acl.py: only `stock` may create and delete
under `/inventory/locks`), over TLS checked against the cluster's CA. Then it holds the lock for
the fault's STALL seconds and releases it at the heal: every claim queued behind it meanwhile, the
stock replicas' own, waits, and the order service's batches that carry the goods id beside others
must not make those others wait (check ST, stall_check.py). A hot goods id: about one order in six
names it, so many batches carry it beside free goods ids.

Why not SIGSTOP a stock worker while it holds a lock: the session of a paused process expires
after ZK_SESSION_TIMEOUT (4 s on the cluster), so ZooKeeper itself ends that stall long before 12
s (pause-stock-worker is that fault); a live client of its own keeps its session and its lock for
as long as it is asked to, as a holder stuck in a slow database call would.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from inventory.cluster import topology
from inventory.cluster.deploy import ClusterState

STALL = 12.0  # seconds the lock is held: the measure, three times the stock call timeout
LOOK = 0.5  # how often the queue behind the held lock is counted
ACQUIRE_WITHIN = 5.0  # the replicas hold a lock for milliseconds; a queue this slow is a fault
SESSION = float(topology.SERVICE_SETTINGS["ZK_SESSION_TIMEOUT"])

# The run's hot goods ids (run.py sets them), of which the fault stalls one
hot: list[str] = []


@dataclass
class Stall:
    """One lock held by the fault: which, from when to when (time.monotonic())."""

    goods_id: str
    lock_path: str
    node: str = ""
    token: int | None = None
    acquired: float | None = None  # None: never held (the detail says why)
    released: float | None = None
    queued_at_release: int = 0  # other claims waiting behind our node when it was released
    most_queued: int = 0  # the most seen waiting behind it, looked at every LOOK s while held
    error: str = ""
    _claim: Any = field(default=None, repr=False)
    _locks: Any = field(default=None, repr=False)


stalls: list[Stall] = []  # every stall of the run, in order (run.py reads them)
_held: list[Stall] = []  # the ones not released yet
_guard = threading.Lock()


def begin(hot_goods: list[str]) -> None:
    """A run's start: the goods ids it may stall, no stall yet."""
    hot[:] = list(hot_goods)
    with _guard:
        stalls.clear()


def target(goods: list[str], rng: random.Random) -> str:
    """The goods id whose lock the fault holds: one of the hot ones."""
    if not goods:
        raise ValueError("no hot goods id to stall")
    return rng.choice(sorted(goods))


def lock_path(goods_id: str) -> str:
    """The path the stock service queues on for `goods_id` (its settings' root, its names)."""
    from coordination.locks import lock_names
    from shared.config.settings import Settings

    settings = Settings()
    [name] = lock_names([goods_id], settings.lock_scope)
    return f"{settings.lock_root.rstrip('/')}/{name}"


def make_locks(state: ClusterState) -> Any:
    """The stock service's lock backend, as a replica builds it, but ours: the cluster's
    ensemble, the stock identity, TLS against the cluster's CA."""
    from coordination.locks.zookeeper import ZooKeeperLocks, ZooKeeperTLS
    from shared.config.settings import Settings

    secrets = state.secrets
    return ZooKeeperLocks(
        topology.ZK_HOSTS,
        Settings().lock_root,
        SESSION,
        auth=secrets.zk_auth("stock"),
        tls=ZooKeeperTLS.of(secrets.tls_ca),
    )


def hold(locks: Any, goods_id: str, within: float = ACQUIRE_WITHIN) -> Stall:
    """Take `goods_id`'s lock on `locks` (a ZooKeeperLocks), waiting up to `within` s; the
    Stall says whether it was had (acquired) or why not (error)."""
    stall = Stall(goods_id, lock_path(goods_id), _locks=locks)
    try:
        claim = locks.new_claim([goods_id])
        stall._claim = claim
        held = claim.wait(time.monotonic() + within)
    except Exception as exc:  # the lock service's failure is what the report must say
        stall.error = f"{type(exc).__name__}: {exc}"
        return stall
    if goods_id not in held:
        claim.release([goods_id])
        stall.error = f"not had within {within:g} s"
        return stall
    stall.acquired = time.monotonic()
    lease = claim.lease([goods_id])
    stall.token = lease.token_for(goods_id)
    stall.node = lease.details.get(goods_id, "")
    threading.Thread(target=_count_queue, args=(stall,), daemon=True).start()
    return stall


def _queued(stall: Stall) -> int:
    ours = stall.node.rsplit("/", 1)[-1]
    return sum(1 for c in stall._locks.client.get_children(stall.lock_path) if c != ours)


def _count_queue(stall: Stall) -> None:
    """While held: the most claims (the replicas' own) seen queued behind ours."""
    while stall.released is None and stall._claim is not None:
        try:
            stall.most_queued = max(stall.most_queued, _queued(stall))
        except Exception:
            return  # the release closed the client, or the session went: nothing more to see
        time.sleep(LOOK)


def release(stall: Stall) -> None:
    """Let the lock go; first count the claims queued behind ours (the replicas' waiters)."""
    if stall._claim is None:
        return
    try:
        if stall.acquired is not None and stall.released is None:
            stall.queued_at_release = _queued(stall)
            stall.most_queued = max(stall.most_queued, stall.queued_at_release)
            stall._claim.release([stall.goods_id])
            stall.released = time.monotonic()
    except Exception as exc:
        stall.error = f"at the release, {type(exc).__name__}: {exc}"
        stall.released = time.monotonic()  # the session's end releases it below
    finally:
        stall._claim = None
        stall._locks.close()


def inject(state: ClusterState, rng: random.Random) -> str:
    goods_id = target(hot, rng)
    try:
        locks = make_locks(state)
    except Exception as exc:
        stall = Stall(goods_id, lock_path(goods_id), error=f"{type(exc).__name__}: {exc}")
    else:
        stall = hold(locks, goods_id)
        if stall.acquired is None:
            locks.close()
    with _guard:
        stalls.append(stall)
        if stall.acquired is not None:
            _held.append(stall)
    if stall.acquired is None:
        return f"{goods_id}'s lock not taken ({stall.error}): no stall"
    return (
        f"{goods_id}'s lock taken by a client of the run's own as the stock identity "
        f"({stall.node}, fencing token {stall.token}), held {STALL:g} s"
    )


def heal(state: ClusterState) -> str | None:
    notes = []
    with _guard:
        held, _held[:] = list(_held), []
    for stall in held:
        release(stall)
        seconds = (stall.released or 0.0) - (stall.acquired or 0.0)
        notes.append(
            f"{stall.goods_id}'s lock released after {seconds:.1f} s, "
            f"{stall.queued_at_release} claims queued behind it then, at most "
            f"{stall.most_queued}" + (f" ({stall.error})" if stall.error else "")
        )
    return "; ".join(notes) or None


def forget() -> None:
    """After a crashed run: no lock left held (heal_everything)."""
    with _guard:
        held, _held[:] = list(_held), []
    for stall in held:
        release(stall)
