"""`inventory up / down / status`: the local stack.

With nothing configured it is self-contained, everything under one git-ignored folder
(INVENTORY_HOME, default ./.inventory): its own ZooKeeper and redis-server processes on free
loopback ports, SQLite databases, and both services under gunicorn with several workers.
ZK_HOSTS, REDIS_URL, ORDER_DATABASE_URL and STOCK_DATABASE_URL point it at real servers instead.
`down` stops exactly the processes `up` recorded in stack.json (stack_state.py).

`up` is its steps, in order, each a function named for what it does: refuse what the services
would refuse, or a stack running with other settings; start the lock and flag servers unless
given (lock_servers.py); record the state; migrate; start the services, then the reconcilers,
the relays of stock events and the deliverers of webhooks (each given the caller's environment
under the stack's settings: WEBHOOK_ALLOW_PRIVATE=true lets a receiver on 127.0.0.1 subscribe);
wait until the services are healthy; start monitoring when asked. Whatever a step started is
stopped if a later one fails.
"""

from __future__ import annotations

import os
import secrets
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import migrations
from inventory.local.databases import DatabaseProblem, usable_url
from inventory.local.dependencies import check_dependencies
from inventory.local.lock_servers import (
    etcd_if_the_lock_needs_it,
    redis_unless_given,
    redlock_servers_if_the_lock_needs_them,
    zookeeper_unless_given,
)
from inventory.local.monitoring import INSTALL_HINT, scrape_config, start_prometheus, static_targets
from inventory.local.processes import (
    SINGLETONS,
    start_services,
    start_singletons,
    wait_until_the_services_are_healthy,
)
from inventory.local.servers import (
    stop_pid,
)
from inventory.local.stack_state import (
    STATE_FILE,
    StackState,
    home_dir,
    is_running,
    load_state,
    save_state,
)
from shared.config.settings import Settings


class SettingsError(ValueError):
    """The stack was asked for settings the services would refuse, or that differ from those
    of the stack already running: nothing was started."""


def up(
    home: Path | None = None,
    workers: int = 2,
    threads: int = 8,
    extra_env: dict[str, str] | None = None,
    say: Any = print,
    reconcilers: int = 0,
    relays: int = 0,
    monitoring: bool = False,
    deliverers: int = 0,
) -> StackState:
    """Start the stack; `reconcilers` instances of the elected reconciler, `relays` of the
    relay of stock events and `deliverers` of the deliverer of webhooks with it (the CLI's
    `inventory up` starts two of each; the stacks of tests, demos and benches none unless they
    ask); with `monitoring`, a prometheus scraping both services."""
    home = home or home_dir()
    if monitoring and shutil.which("prometheus") is None:
        raise SettingsError(INSTALL_HINT)
    env = {**os.environ, **(extra_env or {})}
    settings, urls = refuse_what_the_services_would(env, home)
    existing = load_state(home)
    if existing and is_running(existing):
        refuse_other_settings_than_the_running(existing, settings, workers, threads, home)
        say(f"stack already running (state in {home / STATE_FILE})")
        return existing
    if existing:
        down(home, say=lambda *_: None)  # a half-dead stack: clear what is left
    check_dependencies(env, settings.lock_backend)  # a server it was pointed at is there
    home.mkdir(parents=True, exist_ok=True)
    started: dict[str, int] = {}  # each step records its processes here, for the way out
    try:
        lock_servers = (
            zookeeper_unless_given(env, home, started),
            redis_unless_given(env, home, started),
            etcd_if_the_lock_needs_it(settings, env, home, started),
            redlock_servers_if_the_lock_needs_them(settings, env, home, started),
        )
        state = record_state(home, settings, urls, lock_servers, workers, threads, env, started)
        migrations.upgrade(state.order_database_url, "order")
        migrations.upgrade(state.stock_database_url, "stock")
        service_env = start_services(state, env, started)
        start_singletons("reconciler", reconcilers, home, service_env, started)
        start_singletons("relay", relays, home, service_env, started)
        start_singletons("deliverer", deliverers, home, service_env, started)
        save_state(state)
        wait_until_the_services_are_healthy(state, started)
        if monitoring:
            start_monitoring(state, started)
            save_state(state)
    except BaseException:
        for pid in reversed(list(started.values())):
            stop_pid(pid)
        (home / STATE_FILE).unlink(missing_ok=True)
        raise
    return state


def refuse_what_the_services_would(
    env: dict[str, str], home: Path
) -> tuple[Settings, dict[str, str]]:
    """The settings and database URLs, refused before anything starts where the services would
    refuse them at start-up, or where no one can use a URL."""
    urls = {
        "ORDER_DATABASE_URL": env.get("ORDER_DATABASE_URL", f"sqlite:///{home / 'order.db'}"),
        "STOCK_DATABASE_URL": env.get("STOCK_DATABASE_URL", f"sqlite:///{home / 'stock.db'}"),
    }
    try:
        settings = Settings.from_env({**env, **urls})
    except ValueError as exc:
        raise SettingsError(str(exc)) from exc
    for variable, url in urls.items():
        try:
            usable_url(url, variable)
        except DatabaseProblem as exc:
            raise SettingsError(str(exc)) from None
    return settings, urls


def refuse_other_settings_than_the_running(
    existing: StackState, settings: Settings, workers: int, threads: int, home: Path
) -> None:
    asked = (settings.lock_backend, settings.lock_scope, workers, threads)
    running = (existing.lock_backend, existing.lock_scope, existing.workers, existing.threads)
    if asked != running:
        raise SettingsError(
            f"a stack is already running with LOCK_BACKEND={running[0]}, "
            f"LOCK_SCOPE={running[1]}, --workers {running[2]}, --threads {running[3]} "
            f"(state in {home / STATE_FILE}); `inventory down` first to start another"
        )


def record_state(
    home: Path,
    settings: Settings,
    urls: dict[str, str],
    lock_servers: tuple[str, str, str, str],
    workers: int,
    threads: int,
    env: dict[str, str],
    started: dict[str, int],
) -> StackState:
    """stack.json written: from here on, `down` can stop what was started even after a crash."""
    zk_hosts, redis_url, etcd_endpoints, redlock_urls = lock_servers
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
    save_state(state)
    return state


def start_monitoring(state: StackState, started: dict[str, int]) -> None:
    targets = static_targets(urlsplit(state.order_url).netloc, urlsplit(state.stock_url).netloc)
    prometheus = start_prometheus(Path(state.home) / "prometheus", scrape_config(targets))
    started["prometheus"] = prometheus.pid
    state.prometheus_url = f"http://127.0.0.1:{prometheus.port}"


def down(home: Path | None = None, say: Any = print) -> list[str]:
    home = home or home_dir()
    state = load_state(home)
    if state is None:
        say("no stack recorded; nothing to stop")
        return []
    stopped = []
    # Services first, so they do not log the loss of their dependencies while stopping.
    singletons = [n for n in state.pids if n.startswith(tuple(SINGLETONS))]
    lock_servers = [n for n in state.pids if n.startswith("redlock")]
    for name in (
        "prometheus",
        *singletons,
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
