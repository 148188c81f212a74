"""What `inventory up` records of the stack it started (stack.json under INVENTORY_HOME):
the addresses, the settings and the pids, so that `down`, `status` and every command that
drives the stack find it again, even after a crash of the process that started it."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from inventory.local.servers import ServerProcess, pid_alive

STATE_FILE = "stack.json"


def home_dir() -> Path:
    return Path(os.environ.get("INVENTORY_HOME", ".inventory")).resolve()


@dataclass
class StackState:
    home: str
    order_url: str
    stock_url: str
    zk_hosts: str
    redis_url: str
    order_database_url: str
    stock_database_url: str
    lock_backend: str
    lock_scope: str
    pids: dict[str, int] = field(default_factory=dict)  # what `up` started, by name
    workers: int = 2
    threads: int = 8
    etcd_endpoints: str = ""  # only with LOCK_BACKEND=etcd
    redlock_urls: str = ""  # only with LOCK_BACKEND=redlock
    admin_token: str = ""  # the services' ADMIN_TOKEN: `up` generates one unless given
    prometheus_url: str = ""  # only with `up --monitoring`

    def admin_headers(self) -> dict[str, str]:
        """What a client of this stack sends to its admin routes (PUT /stock, /faults)."""
        return {"Authorization": f"Bearer {self.admin_token}"} if self.admin_token else {}

    def as_json(self) -> dict[str, Any]:
        """What `status --json` shows. The admin token is not: it opens PUT /stock and /faults,
        and a status ends up in terminals, CI logs and bug reports. It stays in stack.json
        (mode 600), whose path is given instead."""
        data = asdict(self)
        if self.admin_token:
            data["admin_token"] = "***"
            data["admin_token_in"] = str(Path(self.home, STATE_FILE))
        data["running"] = {name: pid_alive(pid) for name, pid in self.pids.items()}
        return data

    def env(self) -> dict[str, str]:
        return {
            "ZK_HOSTS": self.zk_hosts,
            "REDIS_URL": self.redis_url,
            "ORDER_DATABASE_URL": self.order_database_url,
            "STOCK_DATABASE_URL": self.stock_database_url,
            "STOCK_SERVICE_URL": self.stock_url,
            "LOCK_BACKEND": self.lock_backend,
            "LOCK_SCOPE": self.lock_scope,
            **({"ETCD_ENDPOINTS": self.etcd_endpoints} if self.etcd_endpoints else {}),
            **({"REDLOCK_URLS": self.redlock_urls} if self.redlock_urls else {}),
            **({"ADMIN_TOKEN": self.admin_token} if self.admin_token else {}),
        }


def load_state(home: Path | None = None) -> StackState | None:
    path = (home or home_dir()) / STATE_FILE
    if not path.exists():
        return None
    return StackState(**json.loads(path.read_text()))


def save_state(state: StackState) -> None:
    """Written whole or not at all: `up` saves the state again as each process starts, and
    `status`, `down` or a test reading it meanwhile must never see a half-written (or empty)
    file. The new text goes to a file of its own, made readable by its owner only (it holds
    the admin token), then takes the old one's name in one rename."""
    path = Path(state.home, STATE_FILE)
    fd, partial = tempfile.mkstemp(dir=state.home, prefix=f".{STATE_FILE}.")  # mode 600
    try:
        with os.fdopen(fd, "w") as out:
            out.write(json.dumps(asdict(state), indent=2))
        os.replace(partial, path)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise


def is_running(state: StackState) -> bool:
    return bool(state.pids) and all(pid_alive(pid) for pid in state.pids.values())


def server_process(state: StackState, name: str) -> ServerProcess | None:
    """The ZooKeeper or Redis process this stack started (for fault demos), if any."""
    pid = state.pids.get(name)
    if pid is None:
        return None
    address = state.zk_hosts if name == "zookeeper" else state.redis_url.split("//")[1]
    port = int(address.split(":")[1].split("/")[0])
    return ServerProcess(name, port, pid, Path(state.home) / name)
