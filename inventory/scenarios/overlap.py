"""The story the lease locks' demos share (stale-holder on ZooKeeper, unique-key-lock, redlock):
a holder stopped past its lease overlaps with the next holder, both believing they hold the
last unit. With fencing the stock row refuses the stale write; without it the unit sells twice.

Each lock shows its own evidence (the ZooKeeper lock node, the rows of lock_keys, the keys on
the RedLock servers) through an `Evidence`: what is held when the holder stops, when that lease
has expired (and what that means), what is held after the next buyer's order.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from typing import Any, Protocol

from inventory.local.client import StackClient
from inventory.local.servers import wait_until
from inventory.scenarios.rig import (
    Background,
    Rig,
    Story,
    finish,
    log_lines,
    order_body,
    process_state,
    timed_order,
    wait_for_pid,
    worker_fault,
)
from inventory.scenarios.settle import settle_pending

REFUSED = "lock lost, nothing written"  # the stock service's 503 line, fence or lease check


class Evidence(Protocol):
    lease: str  # what expires, for the story: "ZooKeeper session", "lock_keys row", ...

    def held(self, rig: Rig) -> list[str]: ...
    def expired(self, rig: Rig) -> bool: ...
    def after(self, rig: Rig) -> list[str]: ...


def slow_holder(
    story: Story,
    name: str,
    env: dict[str, str],
    unfenced: bool,
    evidence: Evidence,
    buyers: tuple[str, str] = ("carol", "dave"),
) -> dict[str, Any]:
    """The first buyer's worker stops after reading the last unit; once its lease has expired
    the second buyer buys that unit; then the stopped worker resumes and writes. Returns the
    checks and the facts."""
    first, second = buyers
    prefix = f"sc-{name[:10]}-{uuid.uuid4().hex[:6]}-"
    # No retries of the first buyer's call: the retry would queue behind the stopped worker
    # and buy the unit itself once the lease expired (correct too, but then nobody meets the
    # stale write, which is what this story shows).
    env = {**env, "FENCING": "false" if unfenced else "true", "STOCK_CALL_RETRIES": "0"}
    with worker_fault(name, prefix, 1, "stop_after_read", **env) as rig:
        state, client, goods = rig.state, rig.client, rig.goods
        story.step(
            f"Fencing {'OFF' if unfenced else 'on'}. Seeded {goods} = 1 (the last unit). "
            "Fault armed: the worker that reads the level under the lock stops itself "
            "(SIGSTOP), like a long GC pause."
        )
        order_1 = Background(lambda: timed_order(StackClient(state), order_body(first, goods)))
        pid = wait_for_pid(rig.flags)
        for line in evidence.held(rig):
            story.show(
                f"worker {pid} (state {process_state(pid)}) read the level (1) holding {line}"
            )
        stopped = time.monotonic()
        wait_until(lambda: evidence.expired(rig), 30, f"the {evidence.lease}'s expiry")
        story.step(
            f"After {time.monotonic() - stopped:.1f} s its {evidence.lease} expired and the lock "
            f"is free; the stopped holder cannot know. {second.title()} orders."
        )
        response_2, _ = timed_order(client, order_body(second, goods))
        story.show(
            f"{second.title()}: HTTP {response_2.status_code} {response_2.json()}; {goods} = "
            f"{client.level(goods)}; row fence now "
            f"{client.stock.get(f'/stock/{goods}').json()['fence']}"
        )
        story.show(f"held now: {evidence.after(rig) or 'nothing (the sale released it)'}")
        os.kill(pid, signal.SIGCONT)
        story.step(f"Worker {pid} resumes (SIGCONT) and writes what it computed from its old read.")
        response_1, _ = order_1.result()
        refusals = log_lines(state, "stock_service", REFUSED)
        for line in refusals or ["(no refusal logged)"]:
            story.show(line)
        story.show(f"{first.title()}: HTTP {response_1.status_code} {response_1.json()}")
        if response_1.json().get("status") == "PENDING":
            # A refused write decided nothing: the order waits for the reconciler (voiding it
            # would lose a sale the stock could still make), which deducts again under the same
            # flag, now against the level the sale left.
            story.step(
                f"{first.title()}'s order stays PENDING (nothing was decided for its flag); "
                "the elected reconciler deducts it again under the same flag."
            )
            settle_pending(state, story, env)
            row = client.order_row(response_1.json()["orderId"])
            story.show(f"{first.title()}'s order: {row['status']} ({row['reason']})")
        level = client.level(goods)
        flows = len(client.flows(response_1.json()["orderId"])) + len(
            client.flows(response_2.json()["orderId"])
        )
        story.step(f"{goods} = {level}; flows for the two orders: {flows} (one unit existed)")
        checks = finish(state, story, prefix)
    return {
        "checks": checks,
        "flows": flows,
        "level": level,
        "refused": bool(refusals),
        "second_status": response_2.status_code,
    }


def overlap_shown(result: dict[str, Any], unfenced: bool) -> bool:
    """What the story must show: fenced, the stale write refused and the unit sold once, every
    check ok; unfenced, the unit sold twice and I1 violated."""
    violated = [c.name for c in result["checks"] if not c.ok]
    if unfenced:
        return bool(result["flows"] == 2 and "initial - final = flows - returns" in violated)
    return bool(
        not violated
        and result["flows"] == 1
        and result["level"] == 0
        and result["refused"]
        and result["second_status"] == 200
    )
