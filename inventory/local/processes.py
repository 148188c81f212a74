"""The stack's own processes: both services under gunicorn, each on a port it is seen to bind,
and the elected singletons (the reconcilers, the relays of stock events, the deliverers of
webhooks), each the product's own program given the stack's settings in its environment (the
caller's environment under them: WEBHOOK_ALLOW_PRIVATE and the retry settings a user set reach
the stock service and the deliverers)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

import httpx

from inventory.local import servers
from inventory.local.gunicorn import ready_folder, service_shape, start_service
from inventory.local.servers import (
    ServerError,
    free_port,
    pid_alive,
    port_open,
    stop_pid,
    wait_until,
)
from inventory.local.stack_state import StackState


def preferred_port(port: int) -> int:
    return port if not port_open(port) else free_port()


def start_services(
    state: StackState, env: dict[str, str], started: dict[str, int]
) -> dict[str, str]:
    """Both services under gunicorn, on 8082 and 8081 when free; their environment returned
    (the reconcilers get the same). The stock service first: the order service is told the
    port it really got."""
    home = Path(state.home)
    workers, threads = state.workers, state.threads

    def stock_env(port: int) -> dict[str, str]:
        state.stock_url = f"http://127.0.0.1:{port}"
        return {**env, **state.env()}

    started["stock_service"], _ = start_listening(
        "stock_service", preferred_port(8082), home, stock_env, workers, threads
    )

    def order_env(port: int) -> dict[str, str]:
        state.order_url = f"http://127.0.0.1:{port}"
        return {**env, **state.env()}

    order_port = preferred_port(8081)
    if f":{order_port}" in state.stock_url:
        order_port = free_port()
    started["order_service"], _ = start_listening(
        "order_service", order_port, home, order_env, workers, threads
    )
    return {**env, **state.env()}


def start_listening(
    module: str,
    port: int,
    home: Path,
    env_for: Callable[[int], dict[str, str]],
    workers: int,
    threads: int,
    attempts: int = 3,
) -> tuple[int, int]:
    """One service started, and waited for until its own gunicorn listens on its port (its
    log says so, with its pid): a port that looked free can be taken by another program
    before gunicorn binds it, and a health check would then be answered by that program.
    Bound elsewhere: started again on a free port. Its pid and port."""
    log = home / f"{module}.log"
    for _ in range(attempts):
        pid = start_service(module, port, home, env_for(port), workers, threads)
        listening = f"Listening at: http://127.0.0.1:{port} ({pid})"
        taken = f"[{pid}] [ERROR] Connection in use"

        def bound(listening: str = listening, taken: str = taken) -> bool:
            text = log.read_text(errors="replace") if log.exists() else ""
            return listening in text or taken in text

        wait_until(bound, 60, f"{module} to bind port {port}", log, alive=partial(pid_alive, pid))
        if listening in log.read_text(errors="replace"):
            return pid, port
        stop_pid(pid)
        port = free_port()
    raise ServerError(f"{module}: no port could be bound in {attempts} attempts (log: {log})")


# The elected singletons: the name `up` gives their instances (reconciler1, ...), their module.
SINGLETONS = {
    "reconciler": "order_service.settling.reconciler",
    "relay": "stock_service.ledger.relay",
    "deliverer": "stock_service.webhooks.deliverer",
}


def start_singletons(
    program: str, count: int, home: Path, service_env: dict[str, str], started: dict[str, int]
) -> None:
    """`count` instances of an elected singleton, the product's own program (reconciler:
    order_service/settling/reconciler.py; relay: stock_service/ledger/relay.py; deliverer:
    stock_service/webhooks/deliverer.py), given the stack's settings in its environment."""
    module = SINGLETONS[program]
    for i in range(1, count + 1):
        started[f"{program}{i}"] = servers.spawn(
            [sys.executable, "-m", module, "--name", f"{program}{i}"],
            home / f"{program}{i}.log",
            home,
            service_env,
        )


def wait_until_the_services_are_healthy(state: StackState, started: dict[str, int]) -> None:
    """Each service answers /healthz and every one of its workers has loaded its app."""
    home = Path(state.home)
    for name, url in (("stock_service", state.stock_url), ("order_service", state.order_url)):
        pid = started[name]
        log, alive = home / f"{name}.log", partial(pid_alive, pid)
        wait_until(partial(healthy, url), 60, name, log, alive=alive)
        workers, _ = service_shape(name, state.workers, state.threads, state.lock_backend)
        wait_until(
            partial(all_workers_ready, ready_folder(home, name), workers),
            60,
            f"{name}'s {workers} workers",
            log,
            alive=alive,
        )


def all_workers_ready(folder: Path, workers: int) -> bool:
    return len(list(folder.glob("*"))) >= workers


def healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False
