"""Scenarios of lock holders that fail: one paused past its session (the stale holder, refused
by the fencing token), and a worker killed in the middle of its deduction."""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

import redis
from kazoo.client import KazooClient
from rich.console import Console

from inventory.client import StackClient
from inventory.cpu import children
from inventory.scenarios.rig import (
    Background,
    ScenarioResult,
    Story,
    finish,
    log_lines,
    order_body,
    timed_order,
    worker_fault,
)
from inventory.servers import pid_alive, wait_until
from stock_service.faults import LAST_PID

# --- 5. stale-holder -----------------------------------------------------------------------


def _wait_for_pid(flags: redis.Redis, timeout: float = 20) -> int:
    found: list[int] = []

    def left() -> bool:
        value = flags.get(LAST_PID)
        if value:
            found.append(int(value))
        return bool(found)

    wait_until(left, timeout, "the faulted worker")
    return found[0]


def _process_state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def _lock_children(zk: KazooClient, path: str) -> list[str]:
    return sorted(zk.get_children(path)) if zk.exists(path) else []


def stale_holder(console: Console | None = None, unfenced: bool = False) -> ScenarioResult:
    story = Story(console)
    prefix = f"sc-stale-{uuid.uuid4().hex[:6]}-"
    name = "stale-holder" + (" (unfenced)" if unfenced else "")
    fencing = "false" if unfenced else "true"
    # No retries of Alice's call: her retry would queue for the lock behind the stopped worker
    # and, once its session expired, buy the unit itself (correct too, but then no second
    # buyer meets the stale write, which is what this story shows).
    with worker_fault(
        "stale-holder", prefix, 1, "stop_after_read", FENCING=fencing, STOCK_CALL_RETRIES="0"
    ) as rig:
        state, client, flags, zk, goods = rig.state, rig.client, rig.flags, rig.zk, rig.goods
        lock_path = rig.lock_path
        story.step(
            f"Seeded {goods} = 1 (the last unit). Fencing "
            f"{'OFF' if unfenced else 'on'}. Fault armed: the worker that reads the level "
            "under the lock stops itself (SIGSTOP), like a long GC pause."
        )
        order_a = Background(lambda: timed_order(StackClient(state), order_body("alice", goods)))
        pid = _wait_for_pid(flags)
        holder = (_lock_children(zk, lock_path) or ["?"])[0]
        story.show(
            f"worker {pid} read the level (1) holding {lock_path}/{holder}, and is now "
            f"stopped (state {_process_state(pid)})"
        )
        paused = time.monotonic()
        wait_until(lambda: not _lock_children(zk, lock_path), 30, "session expiry")
        story.step(
            f"After {time.monotonic() - paused:.1f} s its ZooKeeper session expired "
            "(timeout 2 s): the ephemeral lock node is gone, the lock is free."
        )
        response_b, _ = timed_order(client, order_body("bob", goods))
        story.step(
            f"Bob's order takes the lock on the other worker and buys the last unit: "
            f"HTTP {response_b.status_code} {response_b.json()}"
        )
        story.show(
            f"{goods} = {client.level(goods)}; row fence now "
            f"{client.stock.get(f'/stock/{goods}').json()['fence']}"
        )
        os.kill(pid, signal.SIGCONT)
        story.step(f"Worker {pid} resumes (SIGCONT) and writes what it computed from its old read.")
        response_a, _ = order_a.result()
        wait_until(
            lambda: bool(log_lines(state, "stock_service", response_a.json()["orderId"])) or True,
            5,
            "log",
        )
        for line in log_lines(state, "stock_service", "503") or ["(no refusal logged)"]:
            story.show(line)
        story.show(f"Alice's order: HTTP {response_a.status_code} {response_a.json()}")
        level = client.level(goods)
        flows = len(client.flows(response_a.json()["orderId"])) + len(
            client.flows(response_b.json()["orderId"])
        )
        story.step(f"{goods} = {level}; flows for the two orders: {flows} (one unit existed)")
        checks = finish(state, story, prefix)
    violated = [c.name for c in checks if not c.ok]
    if unfenced:
        ok = "initial - final = flows" in violated
        verdict = (
            (
                f"the stale write went through: {flows} flows for 1 unit, violated: "
                f"{', '.join(violated)}"
            )
            if ok
            else "FAILED: no oversell shown"
        )
    else:
        ok = not violated and flows == 1 and level == 0 and response_b.status_code == 200
        verdict = "the stale holder's write was refused by the fencing token" if ok else "FAILED"
    return ScenarioResult(name, ok, verdict, checks, {"flows": flows, "level": level})


# --- 6. crash-mid-deduction ----------------------------------------------------------------


def crash_mid_deduction(console: Console | None = None) -> ScenarioResult:
    story = Story(console)
    prefix = f"sc-crash-{uuid.uuid4().hex[:6]}-"
    with worker_fault("crash-mid-deduction", prefix, 5, "kill_in_transaction") as rig:
        state, client, flags, zk, goods = rig.state, rig.client, rig.flags, rig.zk, rig.goods
        lock_path = rig.lock_path
        story.step(
            f"Seeded {goods} = 5. Fault armed: the worker that deducts kills itself "
            "(SIGKILL) inside the transaction, holding the lock, before commit."
        )
        order_a = Background(lambda: timed_order(StackClient(state), order_body("alice", goods)))
        pid = _wait_for_pid(flags)
        wait_until(lambda: not pid_alive(pid), 10, "the killed worker")
        nodes = _lock_children(zk, lock_path)
        story.show(
            f"worker {pid} is {_process_state(pid)}; its lock node is still there: "
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
