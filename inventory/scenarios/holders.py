"""Scenarios of lock holders that fail: one paused past its session (the stale holder, refused
by the fencing token), and a worker killed in the middle of its deduction."""

from __future__ import annotations

import time
import uuid

from kazoo.client import KazooClient
from rich.console import Console

from inventory.load.cpu import children
from inventory.local.client import StackClient
from inventory.local.servers import pid_alive, wait_until
from inventory.scenarios.overlap import overlap_shown, slow_holder
from inventory.scenarios.rig import (
    Background,
    Rig,
    ScenarioResult,
    Story,
    finish,
    order_body,
    process_state,
    timed_order,
    wait_for_pid,
    worker_fault,
)

# --- 5. stale-holder -----------------------------------------------------------------------


def _lock_children(zk: KazooClient, path: str) -> list[str]:
    return sorted(zk.get_children(path)) if zk.exists(path) else []


class _ZooKeeperNode:
    """What the stale-holder story shows of the ZooKeeper lock: the holder's ephemeral node."""

    lease = "ZooKeeper session (timeout 2 s; its ephemeral lock node went with it)"

    def held(self, rig: Rig) -> list[str]:
        return [f"{rig.lock_path}/{node}" for node in _lock_children(rig.zk, rig.lock_path)]

    def expired(self, rig: Rig) -> bool:
        return not _lock_children(rig.zk, rig.lock_path)

    def after(self, rig: Rig) -> list[str]:
        return self.held(rig)


def stale_holder(console: Console | None = None, unfenced: bool = False) -> ScenarioResult:
    story = Story(console)
    result = slow_holder(
        story, "stale-holder", {}, unfenced, _ZooKeeperNode(), buyers=("alice", "bob")
    )
    ok = overlap_shown(result, unfenced)
    violated = [c.name for c in result["checks"] if not c.ok]
    if unfenced:
        verdict = f"the stale write went through: {result['flows']} flows for 1 unit, violated: "
        verdict += ", ".join(violated)
    else:
        verdict = "the stale holder's write was refused by the fencing token"
    return ScenarioResult(
        "stale-holder" + (" (unfenced)" if unfenced else ""),
        ok,
        verdict if ok else "FAILED: " + verdict,
        result["checks"],
        {"flows": result["flows"], "level": result["level"]},
    )


# --- 6. crash-mid-deduction ----------------------------------------------------------------


def crash_mid_deduction(console: Console | None = None) -> ScenarioResult:
    story = Story(console)
    prefix = f"sc-crash-{uuid.uuid4().hex[:6]}-"
    # The retry waits out the dead worker's ZooKeeper session (its lock node goes with it):
    # the stock service waits no longer than its caller, so the call's timeout is longer than
    # the session's here.
    calls = {"STOCK_CALL_TIMEOUT": "5"}
    with worker_fault("crash-mid-deduction", prefix, 5, "kill_in_transaction", **calls) as rig:
        state, client, flags, zk, goods = rig.state, rig.client, rig.flags, rig.zk, rig.goods
        lock_path = rig.lock_path
        story.step(
            f"Seeded {goods} = 5. Fault armed: the worker that deducts kills itself "
            "(SIGKILL) inside the transaction, holding the lock, before commit."
        )
        order_a = Background(lambda: timed_order(StackClient(state), order_body("alice", goods)))
        pid = wait_for_pid(flags)
        wait_until(lambda: not pid_alive(pid), 10, "the killed worker")
        nodes = _lock_children(zk, lock_path)
        story.show(
            f"worker {pid} is {process_state(pid)}; its lock node is still there: "
            f"{nodes} (ephemeral: it lives until the session times out)"
        )
        story.step("Bob orders now: the next waiter.")
        order_b = Background(lambda: timed_order(StackClient(state), order_body("bob", goods)))
        killed = time.monotonic()
        wait_until(
            lambda: not any(n in _lock_children(zk, lock_path) for n in nodes),
            30,
            "the dead holder's node",
        )
        story.show(f"the dead holder's node vanished after {time.monotonic() - killed:.1f} s")
        response_b, took_b = order_b.result()
        story.show(f"Bob: HTTP {response_b.status_code} {response_b.json()} after {took_b:.1f} s")
        response_a, took_a = order_a.result()
        story.step(f"Alice: HTTP {response_a.status_code} {response_a.json()} after {took_a:.1f} s")
        story.show(
            "the killed transaction never committed, and the flag stayed in Redis (a flag is "
            "deleted only once its operation is decided): the order service's retry passed "
            "the pre-filter, waited for the dead holder's node to go, and deducted"
        )
        order_a_row = client.order_row(response_a.json()["orderId"])
        level = client.level(goods)
        workers = children(state.pids["stock_service"])
        story.step(f"{goods} = {level} (Alice's unit and Bob's, each once)")
        story.show(
            f"stock service workers now {workers}: gunicorn replaced {pid} "
            f"({'gone' if pid not in workers else 'still there'})"
        )
        checks = finish(state, story, prefix)
    ok = (
        order_a_row["status"] == "CONFIRMED"  # no sale lost to the dead worker
        and response_b.status_code == 200
        and level == 3
        and all(c.ok for c in checks)
    )
    return ScenarioResult(
        "crash-mid-deduction",
        ok,
        "rolled back, then Alice's retry deducted: both orders confirmed" if ok else "FAILED",
        checks,
        {"alice": order_a_row["status"], "level": level},
    )
