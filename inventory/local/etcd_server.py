"""An etcd server of our own (Debian's etcd-server, 3.4) on free loopback ports, for
`LOCK_BACKEND=etcd inventory up` and the tests. Never the machine's etcd, if it has one.
"""

from __future__ import annotations

import json
import shutil
import urllib.request
from pathlib import Path

from inventory.local.servers import ServerError, ServerProcess, free_port, start_server


def start_etcd(folder: Path, port: int | None = None, timeout: float = 30.0) -> ServerProcess:
    """A single-member etcd. The peer and cluster flags are given explicitly: left out, etcd
    advertises its defaults on localhost:2380, which another etcd on this machine may own."""
    if not shutil.which("etcd"):
        raise ServerError("etcd is not installed: apt-get install etcd-server")
    port = port or free_port()
    peer = free_port()
    folder.mkdir(parents=True, exist_ok=True)
    client_url, peer_url = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{peer}"
    argv = [
        "etcd",
        "--name",
        "inventory",
        "--data-dir",
        str(folder / "data"),
        "--listen-client-urls",
        client_url,
        "--advertise-client-urls",
        client_url,
        "--listen-peer-urls",
        peer_url,
        "--initial-advertise-peer-urls",
        peer_url,
        "--initial-cluster",
        f"inventory={peer_url}",
        "--initial-cluster-state",
        "new",
        "--log-level",
        "warn",
        "--logger",
        "zap",
    ]
    return start_server("etcd", argv, port, folder, lambda: etcd_ready(port), timeout)


def etcd_ready(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/health", timeout=0.5) as answer:
            return bool(json.loads(answer.read()).get("health") == "true")
    except (OSError, ValueError):
        return False
