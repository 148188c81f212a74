"""`inventory demo unique-key-lock`: seed 000's lock (a row whose unique key is the lock name)
made to show both of its known flaws and the fixes, on a stack with LOCK_BACKEND=unique-key:

1. A holder killed while holding leaves its row: without an expiry the name would never free.
   With one, the next waiter deletes the expired row and goes on; the wait is the TTL.
2. The expiry lets a slow holder (stopped past it) overlap with the next one: both believe
   they hold the last unit. The fencing token (the row's id) makes the stock row refuse the
   stale write; with --unfenced the unit sells twice.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import sqlalchemy as sa
from rich.console import Console

from coordination.locks.tables import lock_keys
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
from shared.database.engines import make_engine

TTL = 2.0
ENV = {"LOCK_BACKEND": "unique-key", "UNIQUE_KEY_LOCK_TTL": str(TTL)}


def _rows(engine: sa.Engine, name: str) -> list[Any]:
    with engine.connect() as conn:
        return list(conn.execute(sa.select(lock_keys).where(lock_keys.c.name == name)))


def _describe(row: Any) -> str:
    return (
        f"lock_keys row id={row.id} name={row.name} holder={row.holder} "
        f"expires in {row.expires_at - time.time():+.1f} s"
    )


def unique_key_lock(console: Console | None = None, unfenced: bool = False) -> ScenarioResult:
    story = Story(console)
    crash = _dead_holder(story)
    slow = slow_holder(story, "unique-key-slow", ENV, unfenced, _Evidence())
    checks = crash["checks"] + slow["checks"]
    facts = {
        "stuck_s": crash["stuck_s"],
        "alice": crash["alice"],
        "flows": slow["flows"],
        "level": slow["level"],
        "refused": slow["refused"],
    }
    freed = crash["freed_by_expiry"] and crash["stuck_s"] >= TTL * 0.5
    ok = freed and overlap_shown(slow, unfenced)
    if unfenced:
        verdict = (
            f"a dead holder blocked the name {crash['stuck_s']:.1f} s (TTL {TTL:.0f} s); "
            f"without fencing the overlapping holders sold 1 unit {slow['flows']} times"
        )
    else:
        verdict = (
            f"a dead holder blocked the name {crash['stuck_s']:.1f} s (TTL {TTL:.0f} s) until "
            "a waiter cleaned its expired row; the holder paused past its expiry overlapped "
            "with the next one and the fencing token refused its stale write"
        )
    return ScenarioResult(
        "unique-key-lock" + (" (unfenced)" if unfenced else ""),
        ok,
        verdict if ok else "FAILED: " + verdict,
        checks,
        facts,
    )


def _dead_holder(story: Story) -> dict[str, Any]:
    prefix = f"sc-ukc-{uuid.uuid4().hex[:6]}-"
    # Alice's retry waits out the dead holder's row (its TTL): the stock service waits for a
    # lock no longer than its caller, so the call's timeout is longer than the TTL here (with
    # the stories' 1 s, both retries could end before the row expired: her order left PENDING).
    calls = {**ENV, "STOCK_CALL_TIMEOUT": str(TTL + 3)}
    with worker_fault("unique-key-crash", prefix, 5, "kill_in_transaction", **calls) as rig:
        state, client, goods = rig.state, rig.client, rig.goods
        engine = make_engine(state.stock_database_url)
        story.step(
            f"LOCK_BACKEND=unique-key, UNIQUE_KEY_LOCK_TTL={TTL:.0f}. Seeded {goods} = 5. "
            "Fault armed: the worker that deducts kills itself (SIGKILL) holding the lock."
        )
        order_a = Background(lambda: timed_order(StackClient(state), order_body("alice", goods)))
        pid = wait_for_pid(rig.flags)
        wait_until(lambda: not pid_alive(pid), 10, "the killed worker")
        killed = time.monotonic()
        held = _rows(engine, goods)
        for row in held:
            story.show(f"worker {pid} is {process_state(pid)}; its row stays: {_describe(row)}")
        story.show(
            "with the seed's plain method (no expiry column) that row would block the name "
            "forever: nobody else may delete a row it does not own"
        )
        story.step("Bob orders now; his worker polls the insert, finds the row expired, and")
        story.show("deletes it (the cleaner), then takes the name with a row of its own")
        response_b, took_b = timed_order(client, order_body("bob", goods))
        stuck = time.monotonic() - killed
        story.show(
            f"Bob: HTTP {response_b.status_code} {response_b.json()} after {took_b:.1f} s; the "
            f"name was blocked {stuck:.1f} s after the kill"
        )
        response_a, took_a = order_a.result()
        alice = client.order_row(response_a.json()["orderId"])["status"]
        story.show(f"Alice: HTTP {response_a.status_code}, order {alice} after {took_a:.1f} s")
        freed = bool(held) and not any(r.id == held[0].id for r in _rows(engine, goods))
        story.show(f"{goods} = {client.level(goods)}; lock rows left: {len(_rows(engine, goods))}")
        checks = finish(state, story, prefix)
        engine.dispose()
    return {"checks": checks, "stuck_s": stuck, "alice": alice, "freed_by_expiry": freed}


class _Evidence:
    """What the slow-holder story shows of this lock: the rows of lock_keys."""

    lease = f"lock_keys row (UNIQUE_KEY_LOCK_TTL={TTL:.0f})"

    def __init__(self) -> None:
        self.engine: sa.Engine | None = None
        self.stale: list[Any] = []

    def _rows(self, rig: Rig) -> list[Any]:
        if self.engine is None:
            self.engine = make_engine(rig.state.stock_database_url)
        return _rows(self.engine, rig.goods)

    def held(self, rig: Rig) -> list[str]:
        self.stale = self._rows(rig)
        return [_describe(row) for row in self.stale]

    def expired(self, rig: Rig) -> bool:
        return all(row.expires_at < time.time() for row in self.stale)

    def after(self, rig: Rig) -> list[str]:
        rows = [_describe(row) for row in self._rows(rig)]
        if self.engine is not None:
            self.engine.dispose()
        return rows
