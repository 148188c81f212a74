"""Scenarios of retried requests: a double submit, a slow or lost stock answer, a lost Redis
flag. Each ends with one deduction per operation."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import httpx
import redis
from rich.console import Console

from inventory.local import stack_state
from inventory.local.client import StackClient, lock_call_timeout
from inventory.local.servers import ServerProcess, start_redis
from inventory.scenarios.demo import RedisMonitor
from inventory.scenarios.rig import (
    Background,
    ScenarioResult,
    Story,
    arm,
    finish,
    flag_commands,
    log_lines,
    order_body,
    scenario_settings,
    scenario_stack,
    timed_order,
)

# --- 1. double-submit ---------------------------------------------------------------------


def double_submit(console: Console | None = None) -> ScenarioResult:
    story = Story(console)
    prefix = f"sc-dbl-{uuid.uuid4().hex[:6]}-"
    goods = prefix + "phone"
    with scenario_stack("double-submit") as state:
        client = StackClient(state)
        client.seed(goods, 5)
        story.step(
            f"Seeded {goods} = 5. A double click: the same POST /genOrder twice at once, "
            "one Idempotency-Key."
        )
        key = f"click-{uuid.uuid4().hex[:8]}"
        body = order_body("alice", goods)
        gate = threading.Barrier(2)

        def click() -> httpx.Response:
            gate.wait()
            return StackClient(state).gen_order(body, key)

        clicks = [Background(click) for _ in range(2)]
        answers = [c.result() for c in clicks]
        for i, answer in enumerate(answers, 1):
            replayed = answer.headers.get("Idempotent-Replayed") == "true"
            story.show(
                f"click {i}: HTTP {answer.status_code} {answer.json()}  "
                + ("(Idempotent-Replayed: true)" if replayed else "(the original answer)")
            )
        order_ids = {a.json().get("orderId") for a in answers}
        flows = client.flows(next(iter(order_ids)))
        level = client.level(goods)
        story.step("What the databases hold")
        story.show(
            f"distinct order ids answered: {len(order_ids)}; flows: {len(flows)}; {goods} = {level}"
        )
        checks = finish(state, story, prefix)
        client.close()
    ok = len(order_ids) == 1 and len(flows) == 1 and level == 4 and all(c.ok for c in checks)
    return ScenarioResult(
        "double-submit",
        ok,
        "one order, one deduction for two submits" if ok else "FAILED",
        checks,
        {"orders": len(order_ids), "level": level},
    )


# --- 2. slow-stock and 3. lost-response --------------------------------------------------


def _late_answer(name: str, point: str, console: Console | None) -> ScenarioResult:
    story = Story(console)
    prefix = f"sc-{name[:4]}-{uuid.uuid4().hex[:6]}-"
    goods = prefix + "phone"
    with scenario_stack(name) as state:
        client = StackClient(state)
        client.seed(goods, 3)
        arm(state, point, value=2.5)
        where = (
            "before it deducts"
            if point == "delay_before_deduct"
            else "after it has committed, before it answers"
        )
        story.step(
            f"Seeded {goods} = 3. Fault armed: the stock service sleeps 2.5 s {where}; "
            "the order service's call times out after 1 s."
        )
        with RedisMonitor(state.redis_url) as monitor:
            response, took = timed_order(client, order_body("bob", goods))
        order_id = response.json().get("orderId", "")
        story.step(
            f"POST /genOrder -> HTTP {response.status_code} {response.json()} after {took:.1f} s"
        )
        story.step("The flag in Redis, as MONITOR saw it")
        for line in flag_commands(monitor, order_id):
            story.show(line)
        commands = flag_commands(monitor, order_id)
        checked = sum(1 for line in commands if line.startswith("EXISTS"))
        story.show(
            f"{checked} EXISTS: each attempt's pre-filter. "
            + (
                "The flag stays until its operation is decided, so the retry passed the "
                "filter while the first attempt slept; under the lock one of them deducted, "
                "the other found the flow and was answered `duplicate`."
                if point == "delay_before_deduct"
                else "The first attempt deducted, committed and deleted the flag before its "
                "sleep; the retry found the flag gone and was answered `duplicate`."
            )
        )
        story.step("The stock service's own log for this flag")
        for line in log_lines(state, "stock_service", order_id):
            story.show(line)
        flows = client.flows(order_id)
        level = client.level(goods)
        story.step(f"Flows for the flag: {len(flows)}; {goods} = {level} (was 3)")
        story.show("the order service read the deduction back from the stock flow: CONFIRMED once")
        checks = finish(state, story, prefix)
        client.close()
    ok = (
        response.status_code == 200
        and len(flows) == 1
        and level == 2
        and checked >= 2
        and all(c.ok for c in checks)
    )
    return ScenarioResult(
        name,
        ok,
        "confirmed once, deducted once" if ok else "FAILED",
        checks,
        {"seconds": round(took, 2), "attempts_seen_by_redis": checked},
    )


def slow_stock(console: Console | None = None) -> ScenarioResult:
    return _late_answer("slow-stock", "delay_before_deduct", console)


def lost_response(console: Console | None = None) -> ScenarioResult:
    return _late_answer("lost-response", "delay_after_commit", console)


# --- 4. redis-flag-lost --------------------------------------------------------------------


def _restart_redis(state: stack_state.StackState, keep_snapshot: bool) -> ServerProcess:
    """Stop the stack's Redis and start it again on the same port and folder; it loads
    dump.rdb if one is there."""
    old = stack_state.server_process(state, "redis")
    assert old is not None, "this scenario needs the stack's own Redis"
    old.stop()
    folder = Path(state.home) / "redis"
    if not keep_snapshot:
        (folder / "dump.rdb").unlink(missing_ok=True)
    new = start_redis(folder, port=old.port)
    state.pids["redis"] = new.pid
    stack_state.save_state(state)  # so that `down` stops the new process
    return new


def _reduce(state: stack_state.StackState, flag: str, goods: str) -> httpx.Response:
    """PUT /reduceStock as the order service sends it, retried while Redis reconnects."""
    for _ in range(5):
        response = httpx.put(
            f"{state.stock_url}/reduceStock/{flag}",
            json=[{"goodsId": goods, "goodsNum": 1}],
            timeout=lock_call_timeout(scenario_settings(state)),  # it may wait for the lock
        )
        if response.status_code != 503:
            return response
        time.sleep(0.2)
    return response


def redis_flag_lost(console: Console | None = None) -> ScenarioResult:
    story = Story(console)
    prefix = f"sc-rfl-{uuid.uuid4().hex[:6]}-"
    goods = prefix + "phone"
    with scenario_stack("redis-flag-lost") as state:
        client = StackClient(state)
        client.seed(goods, 5)
        flags = redis.Redis.from_url(state.redis_url, decode_responses=True)
        story.step(
            f"Seeded {goods} = 5. Here the demo plays the order service: it writes the "
            "flag and calls PUT /reduceStock itself, so the faults fall between attempts."
        )

        story.step("Act 1: Redis restarts empty between the first attempt and its retry.")
        flag1 = f"sc-{uuid.uuid4().hex[:12]}"
        flags.set(flag1, "orderId", ex=600)
        first = _reduce(state, flag1, goods)
        story.show(
            f"attempt 1: HTTP {first.status_code} {first.json()['outcome']} "
            "(its answer is lost on the way back)"
        )
        _restart_redis(state, keep_snapshot=False)
        flags = redis.Redis.from_url(state.redis_url, decode_responses=True)
        story.show(f"Redis restarted: EXISTS {flag1} -> {flags.exists(flag1)}")
        retry = _reduce(state, flag1, goods)
        story.show(
            f"retry: HTTP {retry.status_code} {retry.json()['outcome']}: the flag is "
            "gone from Redis, and the stock database says it was deducted "
            f"({len(client.flows(flag1))} flow)"
        )

        story.step(
            "Act 2: Redis comes back from a snapshot taken before the flag was taken "
            "(the flag is back)."
        )
        flag2 = f"sc-{uuid.uuid4().hex[:12]}"
        flags.set(flag2, "orderId", ex=600)
        flags.save()
        first2 = _reduce(state, flag2, goods)
        story.show(f"attempt 1: HTTP {first2.status_code} {first2.json()['outcome']} (answer lost)")
        _restart_redis(state, keep_snapshot=True)
        flags = redis.Redis.from_url(state.redis_url, decode_responses=True)
        back = flags.exists(flag2)
        story.show(f"Redis restarted from the snapshot: EXISTS {flag2} -> {back}")
        retry2 = _reduce(state, flag2, goods)
        story.show(
            f"retry: HTTP {retry2.status_code} {retry2.json()['outcome']}: the "
            "pre-filter let it through, and the stock-flow table stopped it"
        )
        for line in log_lines(state, "stock_service", flag2):
            story.show(line)

        story.step(
            "Act 3: Redis restarts empty after the flag was written and before any attempt "
            "decided it (the first attempt never arrived)."
        )
        flag3 = f"sc-{uuid.uuid4().hex[:12]}"
        flags.set(flag3, "orderId", ex=600)
        _restart_redis(state, keep_snapshot=False)
        flags = redis.Redis.from_url(state.redis_url, decode_responses=True)
        story.show(f"Redis restarted: EXISTS {flag3} -> {flags.exists(flag3)}")
        lost = _reduce(state, flag3, goods)
        story.show(
            f"attempt: HTTP {lost.status_code} {lost.json()['outcome']}: neither Redis nor the "
            "stock database knows the flag, so it is not called a duplicate (that would fail "
            "a sale nobody made); nothing deducted"
        )
        flags.set(flag3, "orderId", ex=600)
        served = _reduce(state, flag3, goods)
        story.show(
            f"the order service writes the flag again and retries: HTTP {served.status_code} "
            f"{served.json()['outcome']}"
        )
        level = client.level(goods)
        story.step(f"{goods} = {level}: three operations, three deductions, none twice")
        checks = finish(state, story, prefix)
        client.close()
    ok = (
        retry.json()["outcome"] == "duplicate"
        and back == 1
        and retry2.json()["outcome"] == "duplicate"
        and lost.json()["outcome"] == "unknown_flag"
        and served.json()["outcome"] == "deducted"
        and level == 2
        and all(c.ok for c in checks)
    )
    return ScenarioResult(
        "redis-flag-lost",
        ok,
        "the stock database stopped the double deduction, and the lost flag lost no sale"
        if ok
        else "FAILED",
        checks,
        {"level": level},
    )
