"""What every scenario shares: a stack of its own with fault injection on, a story told step by
step with its evidence, background calls, and the invariant check at the end."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import redis
from kazoo.client import KazooClient
from rich.console import Console

from inventory.check import CheckResult, print_results, run_check
from inventory.local import stack, stack_state
from inventory.local.client import StackClient, stack_settings
from inventory.local.homes import temporary_home
from inventory.local.servers import wait_until
from inventory.scenarios.demo import RedisMonitor
from shared.config.settings import Settings
from shared.faults import LAST_PID

# Short timeouts so every story takes seconds; what each one means is in docs/configuration.md.
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
def scenario_stack(
    name: str, env: Mapping[str, str] | None = None, reconcilers: int = 0, deliverers: int = 0
) -> Iterator[stack_state.StackState]:
    with temporary_home(name) as home:
        state = stack.up(
            home=home,
            extra_env={**SCENARIO_ENV, **(env or {})},
            say=lambda *_: None,
            reconcilers=reconcilers,
            deliverers=deliverers,
        )
        try:
            yield state
        finally:
            stack.down(home=home, say=lambda *_: None)


def scenario_settings(
    state: stack_state.StackState, env: Mapping[str, str] | None = None
) -> Settings:
    """The settings of the services of `scenario_stack(name, env)`."""
    return stack_settings(state, {**os.environ, **SCENARIO_ENV, **(env or {})})


@dataclass
class Rig:
    """A stack with one goods id seeded, a fault armed, and clients to watch it."""

    state: stack_state.StackState
    client: StackClient
    flags: redis.Redis
    zk: KazooClient
    goods: str

    @property
    def lock_path(self) -> str:
        return f"/inventory/locks/{self.goods}"


@contextmanager
def worker_fault(name: str, prefix: str, level: int, point: str, **env: str) -> Iterator[Rig]:
    with scenario_stack(name, env) as state:
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


def arm(state: stack_state.StackState, point: str, value: float = 0, times: int = 1) -> None:
    # A pid an earlier fault left (another scenario on the same Redis, as in the test
    # session) must not pass for the one this fault will leave: wait_for_pid reads the key.
    flags = redis.Redis.from_url(state.redis_url)
    try:
        flags.delete(LAST_PID)
    finally:
        flags.close()
    httpx.put(
        f"{state.stock_url}/faults/{point}",
        json={"value": value, "times": times},
        headers=state.admin_headers(),
        timeout=10,
    ).raise_for_status()


def log_lines(state: stack_state.StackState, service: str, needle: str) -> list[str]:
    path = Path(state.home) / f"{service}.log"
    return [
        line.split(": ", 1)[-1]
        for line in path.read_text(errors="replace").splitlines()
        if needle in line and "HTTP Request" not in line
    ]


def finish(state: stack_state.StackState, story: Story, prefix: str) -> list[CheckResult]:
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


def wait_for_pid(flags: redis.Redis, timeout: float = 20) -> int:
    """The pid a faulted process left in Redis before it stopped or killed itself."""
    found: list[int] = []

    def left() -> bool:
        value = flags.get(LAST_PID)
        if value:
            found.append(int(value))
        return bool(found)

    wait_until(left, timeout, "the faulted worker")
    return found[0]


def process_state(pid: int) -> str:
    """The state letter of /proc/<pid>/stat (T: stopped), or "gone"."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"
