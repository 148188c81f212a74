"""Before `inventory up` starts the services: do the servers it was pointed at (ZK_HOSTS,
REDIS_URL, ETCD_ENDPOINTS, REDLOCK_URLS) answer at all?

The services start whatever their dependencies do and report them on /healthz, so a ZooKeeper
that is not there used to cost a 60-second wait for a readiness that never came, then
"stock_service not ready" and twenty lines of log. A TCP connect to each server (half a second
at most each) finds the mistake at once, and the message names the setting to fix. It proves
reachability only; the services' own checks still judge the rest (credentials, a quorum).
"""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from inventory.local.servers import ServerError

CONNECT_TIMEOUT = 0.5


def answers(host: str, port: int) -> str | None:
    """None when something accepts a connection at host:port, else why not."""
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT):
            return None
    except OSError as exc:
        return exc.strerror or type(exc).__name__


def _host_port(text: str, default_port: int) -> tuple[str, int]:
    host, _, port = text.strip().rpartition(":") if ":" in text else (text.strip(), "", "")
    if host.startswith("[") and host.endswith("]"):  # [::1]:2181
        host = host[1:-1]
    return host or "127.0.0.1", int(port) if port.isdigit() else default_port


def zookeeper_addresses(zk_hosts: str) -> list[tuple[str, int]]:
    """ZK_HOSTS: host:port,host:port[/chroot]."""
    return [_host_port(h, 2181) for h in zk_hosts.split("/", 1)[0].split(",") if h.strip()]


def redis_addresses(url: str) -> list[tuple[str, int]]:
    """A Redis URL's server (redis://, rediss://), or its sentinels (redis+sentinel://a,b/m)."""
    parts = urlsplit(url)
    hosts = parts.netloc.rsplit("@", 1)[-1]
    default = 26379 if parts.scheme.endswith("sentinel") else 6379
    return [_host_port(h, default) for h in hosts.split(",") if h.strip()]


def first_answer(addresses: list[tuple[str, int]]) -> str | None:
    """None when any of the addresses answers (a client needs one), else the reasons."""
    reasons = []
    for host, port in addresses:
        why = answers(host, port)
        if why is None:
            return None
        reasons.append(f"{host}:{port}: {why}")
    return "; ".join(reasons) or "no address given"


def check_dependencies(env: Mapping[str, str], lock_backend: str) -> None:
    """ServerError naming the first configured dependency that does not answer. Only what the
    environment names is probed: what `up` starts itself is started after this."""
    problems: list[tuple[str, str, str | None]] = []  # (what, variable, why)
    if env.get("ZK_HOSTS"):
        problems.append(
            ("ZooKeeper", "ZK_HOSTS", first_answer(zookeeper_addresses(env["ZK_HOSTS"])))
        )
    redis_url = env.get("REDIS_URL", "")
    if redis_url.startswith("unix://"):
        socket_path = urlsplit(redis_url).path
        why = None if Path(socket_path).exists() else f"no socket at {socket_path}"
        problems.append(("Redis", "REDIS_URL", why))
    elif redis_url:
        problems.append(("Redis", "REDIS_URL", first_answer(redis_addresses(redis_url))))
    if lock_backend == "etcd" and env.get("ETCD_ENDPOINTS"):
        endpoints = [urlsplit(e.strip()) for e in env["ETCD_ENDPOINTS"].split(",") if e.strip()]
        addresses = [(e.hostname or "127.0.0.1", e.port or 2379) for e in endpoints]
        problems.append(("etcd", "ETCD_ENDPOINTS", first_answer(addresses)))
    if lock_backend == "redlock" and env.get("REDLOCK_URLS"):
        urls = [u.strip() for u in env["REDLOCK_URLS"].split(",") if u.strip()]
        down = [u for u in urls if first_answer(redis_addresses(u)) is not None]
        if len(down) * 2 >= len(urls):  # RedLock needs a majority
            problems.append(("RedLock's Redis servers", "REDLOCK_URLS", f"{down} do not answer"))
    for what, variable, why in problems:
        if why is not None:
            shown = re.sub(r"//[^/@]*@", "//***@", env[variable])  # no password in a message
            raise ServerError(
                f"{what} at {variable}={shown} does not answer ({why}): start it, or "
                f"unset {variable} to let `inventory up` start its own"
            )
