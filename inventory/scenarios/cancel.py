"""`inventory demo cancel`: an order's stock comes back exactly once, and Seata's three TCC
hazards are met, each narrated with the stock database's rows as evidence.

1. A double cancel: two cancels of one confirmed order at once; one return, one answer.
2. An empty rollback, then a suspension: the order's deduction is held up after the
   pre-filter (a fault point); the buyer cancels meanwhile, by Idempotency-Key; the cancel
   finds no deduction and records that (the flag voided); the deduction, when it goes on, is
   refused.
3. A cancel before its order: the cancel by key leaves a tombstone, and the genOrder that
   comes later under the key is answered CANCELLED, deducting nothing.
4. A hold that expires: payWithinSeconds=2, never paid; the elected reconciler cancels it and
   the stock comes back.
5. Pay against expiry: holds paid right at their deadline, the reconciler expiring them at the
   same time; each ends paid or expired, never both.
"""

from __future__ import annotations

import functools
import threading
import time
import uuid
from datetime import datetime
from typing import Any

import httpx
import sqlalchemy as sa
from rich.console import Console

from inventory.local import stack_state
from inventory.local.client import StackClient
from inventory.local.servers import wait_until
from inventory.scenarios.rig import (
    Background,
    ScenarioResult,
    Story,
    arm,
    finish,
    log_lines,
    order_body,
    scenario_stack,
)
from shared.database.engines import utcnow
from stock_service.storage.tables import flag_decision, stock_flow, stock_return

ENV = {"RECONCILE_INTERVAL": "0.3"}  # holds expire by their deadline, checked every 0.3 s


def stock_rows(state: stack_state.StackState, flag: str) -> dict[str, Any]:
    """The stock database's evidence for one flag: its decision, flows and returns."""
    engine = sa.create_engine(state.stock_database_url)
    try:
        with engine.connect() as conn:
            decided = conn.execute(
                sa.select(flag_decision.c.outcome, flag_decision.c.reason).where(
                    flag_decision.c.flag == flag
                )
            ).first()
            flows = [
                (r.goods_id, r.num)
                for r in conn.execute(sa.select(stock_flow).where(stock_flow.c.flag == flag))
            ]
            returns = [
                (r.goods_id, r.num)
                for r in conn.execute(sa.select(stock_return).where(stock_return.c.flag == flag))
            ]
    finally:
        engine.dispose()
    return {
        "decision": (decided.outcome, decided.reason) if decided else None,
        "flows": flows,
        "returns": returns,
    }


def cancel(console: Console | None = None) -> ScenarioResult:
    story = Story(console)
    prefix = f"sc-cnl-{uuid.uuid4().hex[:6]}-"
    goods = prefix + "phone"
    with scenario_stack("cancel", ENV, reconcilers=2) as state:
        client = StackClient(state)
        client.seed(goods, 10)
        story.step(f"Seeded {goods} = 10; two elected reconcilers run (a pass every 0.3 s).")
        facts: dict[str, Any] = {}
        facts["double"] = _double_cancel(story, state, client, goods)
        facts["suspension"] = _empty_rollback_and_suspension(story, state, client, goods)
        facts["tombstone"] = _cancel_before_the_order(story, state, client, goods)
        facts["expiry"] = _expiring_hold(story, state, client, goods)
        facts["race"] = _pay_against_expiry(story, state, client, goods)
        level = client.level(goods)
        story.step(f"{goods} = {level}, what the paid holds hold: every other unit came back")
        checks = finish(state, story, prefix)
        client.close()
    paid = facts["race"]["paid"]
    ok = (
        facts["double"]["returns"] == [(goods, 2)]
        and facts["suspension"]["refused"]
        and all(facts["tombstone"].values())
        and facts["expiry"]["status"] == "CANCELLED"
        and facts["race"]["both"] == 0
        and level == 10 - paid
        and all(c.ok for c in checks)
    )
    verdict = (
        "one return for two cancels; an empty rollback recorded and the late deduction refused; "
        "a cancel before its order refused the order that came later; "
        f"an unpaid hold expired and its stock back; {paid} holds paid and "
        f"{facts['race']['expired']} expired at their deadline, none both"
    )
    facts["level"] = level
    return ScenarioResult("cancel", ok, verdict if ok else "FAILED: " + verdict, checks, facts)


def _double_cancel(
    story: Story, state: stack_state.StackState, client: StackClient, goods: str
) -> dict[str, Any]:
    story.step("Act 1, a double cancel: an order of 2 units, then two cancels of it at once.")
    placed = client.gen_order(order_body("alice", goods, 2)).json()
    order_id = placed["orderId"]
    story.show(f"placed: {placed['status']}; {goods} = {client.level(goods)}")
    gate = threading.Barrier(2)

    def cancel_once() -> httpx.Response:
        gate.wait()
        return StackClient(state).cancel(order_id)

    answers = [Background(cancel_once) for _ in range(2)]
    for i, answer in enumerate(a.result() for a in answers):
        story.show(f"cancel {i + 1}: HTTP {answer.status_code} {answer.json()['status']}")
    rows = stock_rows(state, order_id)
    story.show(
        f"stock database: decision {rows['decision']}, flows {rows['flows']}, "
        f"returns {rows['returns']} (one return row per line: unique per flag and goods id)"
    )
    story.show(f"{goods} = {client.level(goods)}")
    return rows


def _empty_rollback_and_suspension(
    story: Story, state: stack_state.StackState, client: StackClient, goods: str
) -> dict[str, Any]:
    story.step(
        "Act 2, an empty rollback, then a suspension. Fault armed: the next deduction stops "
        "for 2.5 s after the pre-filter, before the lock. Meanwhile the buyer cancels the "
        "order by its Idempotency-Key."
    )
    injected = "fault injected: delay_before_deduct"
    before = len(log_lines(state, "stock_service", injected))
    arm(state, "delay_before_deduct", 2.5)
    key = f"bob-{uuid.uuid4().hex[:8]}"
    placing = Background(lambda: StackClient(state).gen_order(order_body("bob", goods), key))

    def held() -> bool:
        """Its deduction is held at the fault point: the order exists, PENDING, its flag
        written. (A cancel by key before the order leaves a tombstone instead: no flag, nothing
        to void, not this act's story.)"""
        return len(log_lines(state, "stock_service", injected)) > before

    wait_until(held, 10, "the deduction to be held")
    cancelled = client.cancel_by_key(key).json()
    order_id = cancelled["orderId"]
    story.show(f"cancel: {cancelled['status']}, {cancelled.get('reason')}")
    story.show(f"stock database after the cancel: {stock_rows(state, order_id)}")
    answer = placing.result(30)
    story.show(f"the held-up genOrder answers: HTTP {answer.status_code} {answer.json()}")
    for line in log_lines(state, "stock_service", order_id):
        story.show(line)
    rows = stock_rows(state, order_id)
    refused = (
        rows["flows"] == [] and rows["decision"] is not None and rows["decision"][0] == "voided"
    )
    story.show(f"flows of the flag: {rows['flows']}: the deduction after the cancel was refused")
    return {"refused": refused, **rows}


def _cancel_before_the_order(
    story: Story, state: stack_state.StackState, client: StackClient, goods: str
) -> dict[str, Any]:
    story.step(
        "Act 3, a cancel before its order: the buyer's page timed out before the genOrder "
        "reached the order service, and the buyer cancels by its Idempotency-Key first."
    )
    key = f"erin-{uuid.uuid4().hex[:8]}"
    before = client.level(goods)
    cancelled = client.cancel_by_key(key)
    story.show(
        f"cancel: HTTP {cancelled.status_code} {cancelled.json()['status']}, "
        f"{cancelled.json().get('reason')} (a tombstone under the key)"
    )
    late = client.gen_order(order_body("erin", goods), key)
    story.show(f"the genOrder that comes later: HTTP {late.status_code} {late.json()['status']}")
    after = client.level(goods)
    story.show(f"{goods} = {after}: nothing was deducted")
    return {
        "cancelled": cancelled.status_code == 200,
        "refused": late.status_code == 409 and late.json()["status"] == "CANCELLED",
        "untouched": before == after,
    }


def _expiring_hold(
    story: Story, state: stack_state.StackState, client: StackClient, goods: str
) -> dict[str, Any]:
    story.step("Act 4, a hold that expires: payWithinSeconds=2, never paid.")
    held = client.gen_order({**order_body("carol", goods), "payWithinSeconds": 2}).json()
    order_id = held["orderId"]
    story.show(
        f"placed: {held['status']}, pay by {held.get('payBy')}; {goods} = {client.level(goods)}"
    )

    def expired() -> bool:
        return client.order_row(order_id)["status"] == "CANCELLED"

    wait_until(expired, 20, "the hold's expiry")
    row = client.order_row(order_id)
    story.show(f"the reconciler: {row['status']}, {row['reason']}")
    story.show(f"stock database: {stock_rows(state, order_id)}; {goods} = {client.level(goods)}")
    late = client.pay(order_id)
    story.show(f"a pay now: HTTP {late.status_code} {late.json().get('error')}")
    return {"status": row["status"]}


def _settled(client: StackClient, order_id: str) -> bool:
    return client.order_row(order_id)["status"] in ("CONFIRMED", "CANCELLED")


def _pay_against_expiry(
    story: Story, state: stack_state.StackState, client: StackClient, goods: str
) -> dict[str, int]:
    story.step(
        "Act 5, pay against expiry: five holds of 2 s, paid from 100 ms before their deadline "
        "to 100 ms after it, while the reconciler expires them; the row's compare-and-set "
        "lets exactly one of the two win."
    )
    ids = []
    for i in range(5):
        held = client.gen_order({**order_body(f"dave{i}", goods), "payWithinSeconds": 2}).json()
        ids.append(held["orderId"])
    answers = []
    for offset, order_id in zip((-0.1, -0.05, 0.0, 0.05, 0.1), ids, strict=True):
        deadline = datetime.fromisoformat(client.order_row(order_id)["payBy"])
        time.sleep(max(0.0, (deadline - utcnow()).total_seconds() + offset))
        answers.append(Background(functools.partial(StackClient(state).pay, order_id)))
    paid = expired = both = 0
    for order_id, answer in zip(ids, (a.result() for a in answers), strict=True):
        wait_until(functools.partial(_settled, client, order_id), 20, "the hold to settle")
        row = client.order_row(order_id)
        rows = stock_rows(state, order_id)
        won = "pay" if answer.status_code == 200 else "expiry"
        story.show(
            f"{order_id[-8:]}: pay answered {answer.status_code}, order {row['status']}, "
            f"returns {rows['returns']}: the {won} won"
        )
        paid += row["status"] == "CONFIRMED"
        expired += row["status"] == "CANCELLED"
        both += row["status"] == "CONFIRMED" and bool(rows["returns"])
        both += (answer.status_code == 200) != (row["status"] == "CONFIRMED")
    return {"paid": paid, "expired": expired, "both": both}
