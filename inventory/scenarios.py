"""`inventory demo <scenario>`: each failure made to happen for real, narrated with evidence
(HTTP exchanges, Redis commands, ZooKeeper nodes, database rows, the services' own log lines),
and ended with the invariant check.

Each scenario starts a stack of its own (FAULT_INJECTION=true, short timeouts so the story
takes seconds, not minutes) and stops it afterwards.
"""

from __future__ import annotations

import itertools
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import redis
from kazoo.client import KazooClient
from rich.console import Console

from inventory import stack
from inventory.check import CheckResult, print_results, run_check
from inventory.client import StackClient
from inventory.cpu import children
from inventory.demo import RedisMonitor
from inventory.ensemble import start_zookeeper_ensemble, zk_mode
from inventory.homes import temporary_home
from inventory.servers import ServerProcess, pid_alive, start_redis, wait_until
from stock_service.faults import LAST_PID

# Short timeouts so every story takes seconds; what each one means is in the README.
SCENARIO_ENV = {
    "FAULT_INJECTION": "true",
    "STOCK_CALL_TIMEOUT": "1",
    "STOCK_CALL_RETRIES": "2",
    "RETRY_BACKOFF": "0.2",
    "CONFIRM_BACKOFF": "0.5,1,2,4",
    "ZK_SESSION_TIMEOUT": "2",
    "LOCK_TIMEOUT": "10",
    "LOG_LEVEL": "INFO",
}


@dataclass
class ScenarioResult:
    name: str
    ok: bool  # the scenario showed what it is meant to show
    verdict: str
    checks: list[CheckResult] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def violations(self) -> list[str]:
        return [c.name for c in self.checks if not c.ok]


class Story:
    """Numbered steps and indented evidence, on a rich console (or nowhere)."""

    def __init__(self, console: Console | None) -> None:
        self.console = console
        self.n = 0

    def step(self, text: str) -> None:
        self.n += 1
        if self.console:
            self.console.print(f"\n[bold]{self.n}.[/] {text}")

    def show(self, text: str) -> None:
        if self.console:
            self.console.print(f"   {text}", highlight=False)


@contextmanager
def scenario_stack(name: str, **env: str) -> Iterator[stack.StackState]:
    with temporary_home(name) as home:
        state = stack.up(home=home, extra_env={**SCENARIO_ENV, **env}, say=lambda *_: None)
        try:
            yield state
        finally:
            stack.down(home=home, say=lambda *_: None)


@dataclass
class Rig:
    """A stack with one goods id seeded, a fault armed, and clients to watch it."""

    state: stack.StackState
    client: StackClient
    flags: redis.Redis
    zk: KazooClient
    goods: str

    @property
    def lock_path(self) -> str:
        return f"/inventory/locks/{self.goods}"


@contextmanager
def worker_fault(name: str, prefix: str, level: int, point: str, **env: str) -> Iterator[Rig]:
    with scenario_stack(name, **env) as state:
        client = StackClient(state)
        goods = prefix + "phone"
        client.seed(goods, level)
        zk = KazooClient(hosts=state.zk_hosts)
        zk.start(timeout=10)
        arm(state, point)
        try:
            yield Rig(
                state,
                client,
                redis.Redis.from_url(state.redis_url, decode_responses=True),
                zk,
                goods,
            )
        finally:
            zk.stop()
            zk.close()
            client.close()


def arm(state: stack.StackState, point: str, value: float = 0, times: int = 1) -> None:
    httpx.put(
        f"{state.stock_url}/faults/{point}", json={"value": value, "times": times}, timeout=10
    ).raise_for_status()


def log_lines(state: stack.StackState, service: str, needle: str) -> list[str]:
    path = Path(state.home) / f"{service}.log"
    return [
        line.split(": ", 1)[-1]
        for line in path.read_text(errors="replace").splitlines()
        if needle in line and "HTTP Request" not in line
    ]


def finish(state: stack.StackState, story: Story, prefix: str) -> list[CheckResult]:
    checks = run_check(state.order_database_url, state.stock_database_url, goods_prefix=prefix)
    if story.console:
        print_results(checks, story.console)
    return checks


def order_body(user: str, goods: str, num: int = 1) -> dict[str, Any]:
    return {"userId": user, "items": [{"goodsId": goods, "num": num}]}


def timed_order(
    client: StackClient, body: dict[str, Any], key: str | None = None
) -> tuple[httpx.Response, float]:
    started = time.perf_counter()
    response = client.gen_order(body, key)
    return response, time.perf_counter() - started


class Background:
    """Runs a call in a thread; .result() waits for it."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(fn,), daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[[], Any]) -> None:
        try:
            self._value = fn()
        except BaseException as exc:  # handed to the caller of result()
            self._error = exc

    def result(self, timeout: float = 60) -> Any:
        self._thread.join(timeout)
        if self._error:
            raise self._error
        return self._value


def flag_commands(monitor: RedisMonitor, flag: str) -> list[str]:
    return [line for line in monitor.lines if flag in line]


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
        dels = sum(1 for line in flag_commands(monitor, order_id) if line.startswith("DEL"))
        story.show(
            f"{dels} DELs: the first attempt took the flag; the retry, with the same "
            "flag, found it gone and was answered `duplicate`."
        )
        story.step("The stock service's own log for this flag")
        for line in log_lines(state, "stock_service", order_id):
            story.show(line)
        flows = client.flows(order_id)
        level = client.level(goods)
        story.step(f"Flows for the flag: {len(flows)}; {goods} = {level} (was 3)")
        story.show(
            "polling the stock flow with backoff found the first attempt's deduction"
            if point == "delay_before_deduct"
            else "the first read of the stock flow found the committed deduction"
        )
        checks = finish(state, story, prefix)
        client.close()
    ok = (
        response.status_code == 200
        and len(flows) == 1
        and level == 2
        and dels >= 2
        and all(c.ok for c in checks)
    )
    return ScenarioResult(
        name,
        ok,
        "confirmed once, deducted once" if ok else "FAILED",
        checks,
        {"seconds": round(took, 2), "attempts_seen_by_redis": dels},
    )


def slow_stock(console: Console | None = None) -> ScenarioResult:
    return _late_answer("slow-stock", "delay_before_deduct", console)


def lost_response(console: Console | None = None) -> ScenarioResult:
    return _late_answer("lost-response", "delay_after_commit", console)


# --- 4. redis-flag-lost --------------------------------------------------------------------


def _restart_redis(state: stack.StackState, keep_snapshot: bool) -> ServerProcess:
    """Stop the stack's Redis and start it again on the same port and folder; it loads
    dump.rdb if one is there."""
    old = stack.server_process(state, "redis")
    assert old is not None, "this scenario needs the stack's own Redis"
    old.stop()
    folder = Path(state.home) / "redis"
    if not keep_snapshot:
        (folder / "dump.rdb").unlink(missing_ok=True)
    new = start_redis(folder, port=old.port)
    state.pids["redis"] = new.pid
    stack.save_state(state)  # so that `down` stops the new process
    return new


def _reduce(state: stack.StackState, flag: str, goods: str) -> httpx.Response:
    """PUT /reduceStock as the order service sends it, retried while Redis reconnects."""
    for _ in range(5):
        response = httpx.put(
            f"{state.stock_url}/reduceStock/{flag}",
            json=[{"goodsId": goods, "goodsNum": 1}],
            timeout=10,
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
            "gone, so the pre-filter calls it a duplicate; the stock flow confirms it "
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
        level = client.level(goods)
        story.step(f"{goods} = {level}: two operations, two deductions, none twice")
        checks = finish(state, story, prefix)
        client.close()
    ok = (
        retry.json()["outcome"] == "duplicate"
        and back == 1
        and retry2.json()["outcome"] == "duplicate"
        and level == 3
        and all(c.ok for c in checks)
    )
    return ScenarioResult(
        "redis-flag-lost",
        ok,
        "the stock-flow table stopped the double deduction" if ok else "FAILED",
        checks,
        {"level": level},
    )


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
    with worker_fault("stale-holder", prefix, 1, "stop_after_read", FENCING=fencing) as rig:
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
            "the killed transaction never committed: no flow for her flag, and her "
            "order ended in a final state"
        )
        order_a_row = client.order_row(response_a.json()["orderId"])
        level = client.level(goods)
        workers = children(state.pids["stock_service"])
        story.step(f"{goods} = {level} (only Bob's unit)")
        story.show(
            f"stock service workers now {workers}: gunicorn replaced {pid} "
            f"({'gone' if pid not in workers else 'still there'})"
        )
        checks = finish(state, story, prefix)
    ok = (
        order_a_row["status"] in ("CONFIRMED", "FAILED")
        and response_b.status_code == 200
        and level == 5 - (2 if order_a_row["status"] == "CONFIRMED" else 1)
        and all(c.ok for c in checks)
    )
    return ScenarioResult(
        "crash-mid-deduction",
        ok,
        f"rolled back; Alice's order {order_a_row['status']}, Bob's confirmed" if ok else "FAILED",
        checks,
        {"alice": order_a_row["status"], "level": level},
    )


# --- 7. zk-leader-loss ---------------------------------------------------------------------


def zk_leader_loss(
    console: Console | None = None, orders: int = 600, kill_after: float = 1.5
) -> ScenarioResult:
    story = Story(console)
    with temporary_home("zk-ensemble") as home:
        return _zk_leader_loss(story, home, orders, kill_after)


def _zk_leader_loss(story: Story, home: Path, orders: int, kill_after: float) -> ScenarioResult:
    import asyncio

    from inventory.loadtest import LoadConfig, drive

    ensemble = start_zookeeper_ensemble(home)
    try:
        hosts = ",".join(s.address for s in ensemble)
        story.step(
            f"A 3-node ZooKeeper ensemble on {hosts}: modes {[zk_mode(s.port) for s in ensemble]}"
        )
        env = {
            "ZK_HOSTS": hosts,
            "ZK_SESSION_TIMEOUT": "10",
            "LOCK_TIMEOUT": "15",
            "STOCK_CALL_TIMEOUT": "15",
            "STOCK_CALL_RETRIES": "5",
            "RETRY_BACKOFF": "0.5",
        }
        with scenario_stack("zk-leader-loss", **env) as state:
            leader = next(s for s in ensemble if zk_mode(s.port) == "leader")
            killed_at: list[float] = []

            def kill_leader() -> None:
                time.sleep(kill_after)
                killed_at.append(time.perf_counter())
                os.kill(leader.pid, signal.SIGKILL)  # a crash, not a shutdown

            story.step(
                f"A load test of {orders} orders; the leader ({leader.name}, "
                f"{leader.address}) is killed {kill_after} s in."
            )
            config = LoadConfig(orders=orders, concurrency=16, goods=4, stock=10_000, seed=3)
            killer = threading.Thread(target=kill_leader)
            started = time.perf_counter()
            killer.start()
            result = asyncio.run(drive(state, config, None))
            killer.join()
            kill_time = killed_at[0] - started
            survivors = [s for s in ensemble if s is not leader]
            story.show(
                f"leader killed at t={kill_time:.2f} s; modes now "
                f"{[zk_mode(s.port) for s in survivors]}"
            )
            done = sorted(a.finished for a in result.primary if a.outcome == "confirmed")
            gaps = [(b - a, a) for a, b in itertools.pairwise(done) if b > kill_time - 0.5]
            window, window_start = max(gaps) if gaps else (0.0, 0.0)
            summary = result.summary()
            story.step(
                f"{summary['confirmed']} confirmed, {summary['failed']} failed, errors "
                f"{summary['errors'] or 0}, in {summary['elapsed_s']} s"
            )
            story.show(
                f"unavailable window: no order completed for {window:.2f} s, from "
                f"t={window_start:.2f} s (the kill was at t={kill_time:.2f} s)"
            )
            checks = run_check(
                state.order_database_url, state.stock_database_url, goods_prefix=result.prefix
            )
            if story.console:
                print_results(checks, story.console)
    finally:
        for server in ensemble:
            server.stop()
    ok = all(c.ok for c in checks) and not summary["errors"]
    return ScenarioResult(
        "zk-leader-loss",
        ok,
        f"zero violations; unavailable for {window:.2f} s" if ok else "FAILED",
        checks,
        {
            "window_s": round(window, 3),
            "kill_at_s": round(kill_time, 2),
            "confirmed": summary["confirmed"],
            "failed": summary["failed"],
        },
    )


SCENARIOS: dict[str, Callable[..., ScenarioResult]] = {
    "double-submit": double_submit,
    "slow-stock": slow_stock,
    "lost-response": lost_response,
    "redis-flag-lost": redis_flag_lost,
    "stale-holder": stale_holder,
    "crash-mid-deduction": crash_mid_deduction,
    "zk-leader-loss": zk_leader_loss,
}
