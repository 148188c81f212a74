"""A ZooKeeper ensemble of our own on loopback ports (the zk-leader-loss scenario), and the
mode (leader, follower, standalone) each member reports."""

from __future__ import annotations

import socket
import ssl
from pathlib import Path

from inventory.local.servers import (
    ServerError,
    ServerProcess,
    free_port,
    missing_servers,
    spawn,
    wait_until,
    zookeeper_argv,
)


def zk_mode(
    port: int, host: str = "127.0.0.1", context: ssl.SSLContext | None = None
) -> str | None:
    """'leader', 'follower' or 'standalone' from the `srvr` four-letter word; None if down.
    `context`: a secure client port, which answers the words over TLS only."""
    try:
        with socket.create_connection((host, port), timeout=0.5) as plain:
            s = context.wrap_socket(plain, server_hostname=host) if context else plain
            s.sendall(b"srvr")
            reply = b""
            while chunk := s.recv(4096):
                reply += chunk
    except OSError:
        return None
    for line in reply.decode(errors="replace").splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    return None


def start_zookeeper_ensemble(
    folder: Path, size: int = 3, timeout: float = 90.0
) -> list[ServerProcess]:
    """A ZooKeeper ensemble on loopback ports: `size` JVMs that elect a leader."""
    if "zookeeper" in missing_servers():
        raise ServerError("ZooKeeper is not installed: apt-get install zookeeper")
    ports = [(free_port(), free_port(), free_port()) for _ in range(size)]
    members = "".join(
        f"server.{i + 1}=127.0.0.1:{peer}:{elect}\n" for i, (_, peer, elect) in enumerate(ports)
    )
    servers = []
    try:
        for i, (client, _, _) in enumerate(ports):
            node = folder / f"zk{i + 1}"
            (node / "data").mkdir(parents=True, exist_ok=True)
            (node / "data" / "myid").write_text(f"{i + 1}\n")
            config = node / "zoo.cfg"
            config.write_text(
                "tickTime=500\ninitLimit=20\nsyncLimit=5\n"
                "minSessionTimeout=1000\nmaxSessionTimeout=60000\n"
                f"dataDir={node / 'data'}\nclientPort={client}\nclientPortAddress=127.0.0.1\n"
                "maxClientCnxns=0\nadmin.enableServer=false\n"
                "4lw.commands.whitelist=ruok,srvr,stat,mntr\nforceSync=no\n" + members
            )
            pid = spawn(zookeeper_argv(node, config), node / "zookeeper.log", node)
            servers.append(ServerProcess(f"zk{i + 1}", client, pid, node / "zookeeper.log"))
        wait_until(
            lambda: (
                sorted(str(zk_mode(s.port)) for s in servers).count("leader") == 1
                and all(zk_mode(s.port) in ("leader", "follower") for s in servers)
            ),
            timeout,
            "ZooKeeper ensemble",
            servers[0].log,
            interval=0.25,
        )
    except BaseException:
        for server in servers:
            server.stop()
        raise
    return servers
