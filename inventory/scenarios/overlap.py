"""The story shared by the lease locks' demos (unique-key-lock, redlock): a holder stopped
past its lease overlaps with the next holder, both believing they hold the last unit. With
fencing the stock row refuses the stale write; without it the unit sells twice.

Each lock shows its own evidence (rows of lock_keys, keys on the RedLock servers) through an
`Evidence`: what is held when the holder stops, when that lease has expired, what is held
after the next buyer's order.
"""

from __future__ import annotations

import os
import signal
import uuid
from typing import Any, Protocol

from inventory import stack
from inventory.client import StackClient
from inventory.scenarios.holders import _wait_for_pid
from inventory.scenarios.rig import (
    Background,
    Story,
    finish,
    log_lines,
    order_body,
    timed_order,
    worker_fault,
)
from inventory.servers import wait_until


class Evidence(Protocol):
    def held(self, state: stack.StackState, goods: str) -> list[str]: ...
    def expired(self, state: stack.StackState, goods: str) -> bool: ...
    def after(self, state: stack.StackState, goods: str) -> list[str]: ...


def slow_holder(
    story: Story, name: str, env: dict[str, str], unfenced: bool, evidence: Evidence
) -> dict[str, Any]:
    """Carol's worker stops after reading the last unit; once its lease has expired, Dave buys
    that unit; then Carol's worker resumes and writes. Returns the checks and the facts."""
    prefix = f"sc-{name[:10]}-{uuid.uuid4().hex[:6]}-"
    # No retries of Carol's call: her retry would queue behind the stopped worker and buy the
    # unit itself once the lease expired (correct too, but then nobody meets the stale write).
    env = {**env, "FENCING": "false" if unfenced else "true", "STOCK_CALL_RETRIES": "0"}
    with worker_fault(name, prefix, 1, "stop_after_read", **env) as rig:
        state, client, goods = rig.state, rig.client, rig.goods
        story.step(
            f"A stack with fencing {'OFF' if unfenced else 'on'}. Seeded {goods} = 1 (the last "
            "unit). Fault armed: the worker that reads the level under the lock stops itself "
            "(SIGSTOP), like a long GC pause."
        )
        order_c = Background(lambda: timed_order(StackClient(state), order_body("carol", goods)))
        pid = _wait_for_pid(rig.flags)
        for line in evidence.held(state, goods):
            story.show(f"worker {pid} read the level (1) holding {line}")
        wait_until(lambda: evidence.expired(state, goods), 15, "the lease's expiry")
        story.step("Its lease expired; the stopped holder cannot know. Dave orders.")
        response_d, _ = timed_order(client, order_body("dave", goods))
        story.show(
            f"Dave: HTTP {response_d.status_code} {response_d.json()}; {goods} = "
            f"{client.level(goods)}; row fence now "
            f"{client.stock.get(f'/stock/{goods}').json()['fence']}"
        )
        story.show(f"held now: {evidence.after(state, goods) or 'nothing (Dave released)'}")
        os.kill(pid, signal.SIGCONT)
        story.step(f"Worker {pid} resumes (SIGCONT) and writes what it computed from its old read.")
        response_c, _ = order_c.result()
        refusals = log_lines(state, "stock_service", "refused")
        for line in refusals or ["(no refusal logged)"]:
            story.show(line)
        story.show(f"Carol: HTTP {response_c.status_code} {response_c.json()}")
        level = client.level(goods)
        flows = len(client.flows(response_c.json()["orderId"])) + len(
            client.flows(response_d.json()["orderId"])
        )
        story.step(f"{goods} = {level}; flows for the two orders: {flows} (one unit existed)")
        checks = finish(state, story, prefix)
    return {"checks": checks, "flows": flows, "level": level, "refused": bool(refusals)}
