"""`inventory up / down / status`: the local stack.

With nothing configured it is self-contained, everything under one git-ignored folder
(INVENTORY_HOME, default ./.inventory): its own ZooKeeper and redis-server processes on free
loopback ports, SQLite databases, and both services under gunicorn with several workers.
ZK_HOSTS, REDIS_URL, ORDER_DATABASE_URL and STOCK_DATABASE_URL point it at real servers instead.
`down` stops exactly the processes `up` recorded in stack.json (stack_state.py).
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

import migrations
from inventory.local import servers
from inventory.local.databases import DatabaseProblem, usable_url
from inventory.local.dependencies import check_dependencies
from inventory.local.etcd_server import start_etcd
from inventory.local.gunicorn import start_service
from inventory.local.monitoring import INSTALL_HINT, scrape_config, start_prometheus, static_targets
from inventory.local.servers import (
    free_port,
    pid_alive,
    port_open,
    stop_pid,
    wait_until,
)
from inventory.local.stack_state import (
    STATE_FILE,
    StackState,
    home_dir,
    is_running,
    load_state,
    save_state,
)
from shared.settings import Settings

REDLOCK_SERVERS = 3  # started by `up` for LOCK_BACKEND=redlock when REDLOCK_URLS is not set


class SettingsError(ValueError):
    """The stack was asked for settings the services would refuse, or that differ from those
    of the stack already running: nothing was started."""


def preferred_port(port: int) -> int:
    return port if not port_open(port) else free_port()


def up(
    home: Path | None = None,
    workers: int = 2,
    threads: int = 8,
    extra_env: dict[str, str] | None = None,
    say: Any = print,
    reconcilers: int = 0,
    monitoring: bool = False,
) -> StackState:
    """Start the stack; `reconcilers` instances of the elected reconciler with it (the CLI's
    `inventory up` starts two; the stacks of tests, demos and benches none); with
    `monitoring`, a prometheus scraping both services."""
    home = home or home_dir()
    if monitoring and shutil.which("prometheus") is None:
        raise SettingsError(INSTALL_HINT)
    env = {**os.environ, **(extra_env or {})}
    urls = {
        "ORDER_DATABASE_URL": env.get("ORDER_DATABASE_URL", f"sqlite:///{home / 'order.db'}"),
        "STOCK_DATABASE_URL": env.get("STOCK_DATABASE_URL", f"sqlite:///{home / 'stock.db'}"),
    }
    try:  # what the services would refuse at start-up, refused before anything starts
        settings = Settings.from_env({**env, **urls})
    except ValueError as exc:
        raise SettingsError(str(exc)) from exc
    for variable, url in urls.items():  # a URL no one can use stops `up` before it starts
        try:
            usable_url(url, variable)
        except DatabaseProblem as exc:
            raise SettingsError(str(exc)) from None
    existing = load_state(home)
    if existing and is_running(existing):
        asked = (settings.lock_backend, settings.lock_scope, workers, threads)
        running = (existing.lock_backend, existing.lock_scope, existing.workers, existing.threads)
        if asked != running:
            raise SettingsError(
                f"a stack is already running with LOCK_BACKEND={running[0]}, "
                f"LOCK_SCOPE={running[1]}, --workers {running[2]}, --threads {running[3]} "
                f"(state in {home / STATE_FILE}); `inventory down` first to start another"
            )
        say(f"stack already running (state in {home / STATE_FILE})")
        return existing
    if existing:
        down(home, say=lambda *_: None)  # a half-dead stack: clear what is left
    check_dependencies(env, settings.lock_backend)  # a server it was pointed at is there
    home.mkdir(parents=True, exist_ok=True)
    started: dict[str, int] = {}
    try:
        zk_hosts = env.get("ZK_HOSTS")
        if not zk_hosts:
            zk = servers.start_zookeeper(home / "zookeeper")
            started["zookeeper"] = zk.pid
            zk_hosts = zk.address
        redis_url = env.get("REDIS_URL")
        if not redis_url:
            rd = servers.start_redis(home / "redis")
            started["redis"] = rd.pid
            redis_url = f"redis://{rd.address}/0"
        etcd_endpoints = ""
        if settings.lock_backend == "etcd":
            etcd_endpoints = env.get("ETCD_ENDPOINTS", "")
            if not etcd_endpoints:
                etcd = start_etcd(home / "etcd")
                started["etcd"] = etcd.pid
                etcd_endpoints = f"http://{etcd.address}"
        redlock_urls = ""
        if settings.lock_backend == "redlock":
            redlock_urls = env.get("REDLOCK_URLS", "")
            if not redlock_urls:  # three independent servers, none of them the flag Redis
                nodes = []
                for i in range(REDLOCK_SERVERS):
                    node = servers.start_redis(home / f"redlock{i}")
                    started[f"redlock{i}"] = node.pid
                    nodes.append(f"redis://{node.address}/0")
                redlock_urls = ",".join(nodes)
        state = StackState(
            home=str(home),
            order_url="",
            stock_url="",
            zk_hosts=zk_hosts,
            redis_url=redis_url,
            order_database_url=urls["ORDER_DATABASE_URL"],
            stock_database_url=urls["STOCK_DATABASE_URL"],
            lock_backend=settings.lock_backend,
            lock_scope=settings.lock_scope,
            pids=started,
            workers=workers,
            threads=threads,
            etcd_endpoints=etcd_endpoints,
            redlock_urls=redlock_urls,
            admin_token=env.get("ADMIN_TOKEN") or secrets.token_urlsafe(24),
        )
        save_state(state)  # from here on, `down` can stop what was started even after a crash
        migrations.upgrade(state.order_database_url, "order")
        migrations.upgrade(state.stock_database_url, "stock")
        stock_port, order_port = preferred_port(8082), preferred_port(8081)
        if order_port == stock_port:
            order_port = free_port()
        state.stock_url = f"http://127.0.0.1:{stock_port}"
        state.order_url = f"http://127.0.0.1:{order_port}"
        service_env = {**env, **state.env()}
        started["stock_service"] = start_service(
            "stock_service", stock_port, home, service_env, workers, threads
        )
        started["order_service"] = start_service(
            "order_service", order_port, home, service_env, workers, threads * 2
        )
        for i in range(1, reconcilers + 1):
            started[f"reconciler{i}"] = servers.spawn(
                [sys.executable, "-m", "inventory.cli", "reconciler", "--name", f"reconciler{i}"],
                home / f"reconciler{i}.log",
                home,
                service_env,
            )
        save_state(state)
        for name, url in (("stock_service", state.stock_url), ("order_service", state.order_url)):
            pid = started[name]
            wait_until(
                partial(healthy, url), 60, name, home / f"{name}.log", alive=partial(pid_alive, pid)
            )
        if monitoring:
            targets = static_targets(
                urlsplit(state.order_url).netloc, urlsplit(state.stock_url).netloc
            )
            prometheus = start_prometheus(home / "prometheus", scrape_config(targets))
            started["prometheus"] = prometheus.pid
            state.prometheus_url = f"http://127.0.0.1:{prometheus.port}"
            save_state(state)
    except BaseException:
        for pid in reversed(list(started.values())):
            stop_pid(pid)
        (home / STATE_FILE).unlink(missing_ok=True)
        raise
    return state


def healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def down(home: Path | None = None, say: Any = print) -> list[str]:
    home = home or home_dir()
    state = load_state(home)
    if state is None:
        say("no stack recorded; nothing to stop")
        return []
    stopped = []
    # Services first, so they do not log the loss of their dependencies while stopping.
    reconcilers = [n for n in state.pids if n.startswith("reconciler")]
    lock_servers = [n for n in state.pids if n.startswith("redlock")]
    for name in (
        "prometheus",
        *reconcilers,
        "order_service",
        "stock_service",
        "etcd",
        *lock_servers,
        "redis",
        "zookeeper",
    ):
        pid = state.pids.get(name)
        if pid is None:
            continue
        stop_pid(pid)
        stopped.append(name)
    (home / STATE_FILE).unlink(missing_ok=True)
    say(f"stopped: {', '.join(stopped) or 'nothing'}")
    return stopped
