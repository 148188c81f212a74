"""The peer under gunicorn, with the command line the bench gives the project's services
(inventory/local/gunicorn.py): its tables created and its goods stocked first."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import httpx

from inventory.bench.peer.store import create_tables, set_stock
from inventory.local import servers
from inventory.local.gunicorn import gunicorn_argv
from shared.database.engines import make_engine

MODULE = "inventory.bench.peer.app"


@dataclass
class PeerServer:
    url: str
    pid: int  # gunicorn's master; its workers are its children
    log: Path

    def stop(self) -> None:
        servers.stop_pid(self.pid)


def prepare(database_url: str, levels: dict[str, int]) -> None:
    """The peer's tables in that database (created if missing) and these stock levels."""
    engine = make_engine(database_url)
    try:
        create_tables(engine)
        set_stock(engine, levels)
    finally:
        engine.dispose()


def start_peer(home: Path, database_url: str, workers: int = 2, threads: int = 8) -> PeerServer:
    """gunicorn with `workers` x `threads` (the stock service's shape in the bench's stacks)."""
    home.mkdir(parents=True, exist_ok=True)
    port = servers.free_port()
    argv = gunicorn_argv(MODULE, f"127.0.0.1:{port}", workers, threads)
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    env["PEER_DATABASE_URL"] = database_url
    log = home / "peer.log"
    pid = servers.spawn(argv, log, home, env)
    peer = PeerServer(f"http://127.0.0.1:{port}", pid, log)
    try:
        servers.wait_until(
            partial(_healthy, peer.url),
            60,
            "the one-database peer",
            log,
            alive=partial(servers.pid_alive, pid),
        )
    except BaseException:
        peer.stop()
        raise
    return peer


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False
