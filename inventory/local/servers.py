"""ZooKeeper and Redis server processes of our own, on free loopback ports.

Used by `inventory up` and by the tests. Never touches the machine's own Redis or ZooKeeper:
each server gets its own data folder and a port nobody was listening on.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ZK_JAR = Path("/usr/share/java/zookeeper.jar")
ZK_CONF_DIR = Path("/etc/zookeeper/conf")
ZK_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"


class ServerError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def wait_until(
    check: Callable[[], bool],
    timeout: float,
    what: str,
    log: Path | None = None,
    interval: float = 0.1,
    alive: Callable[[], bool] | None = None,
) -> None:
    """Poll with a deadline; never sleep and hope. With `alive`, a process that died while
    starting fails at once, with the last error line of its log."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        if alive is not None and not alive():
            raise ServerError(f"{what} exited while starting: {last_error(log)} (log: {log})")
        time.sleep(interval)
    # One line, the log's line that says why, rather than the log's last twenty lines.
    where = f" (log: {log})" if log else ""
    raise ServerError(f"{what} not ready within {timeout:.0f}s: {last_error(log)}{where}")


ERROR_LINE = re.compile(r"\b(ERROR|FATAL|CRITICAL)\b")
EXCEPTION_LINE = re.compile(r"^[\w.]+(Error|Exception): ")


def last_error(log: Path | None) -> str:
    """The line of a log that says why: the last exception line of a traceback, else the last
    line marked ERROR or FATAL, else the last line."""
    if log is None or not log.exists():
        return "no log"
    lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    for line in reversed(lines):
        if EXCEPTION_LINE.match(line):
            return line
    for line in reversed(lines):
        if ERROR_LINE.search(line) and "Worker failed to boot" not in line:
            return line
    return lines[-1] if lines else "empty log"


def missing_servers() -> list[str]:
    """What is not installed, as Debian package names."""
    missing = []
    if not (shutil.which("java") and ZK_JAR.exists()):
        missing.append("zookeeper")
    if not shutil.which("redis-server"):
        missing.append("redis-server")
    return missing


def stop_pid(pid: int, timeout: float = 10.0) -> None:
    """SIGTERM, wait, then SIGKILL: the process (and its group) is gone when this returns."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        except PermissionError:
            os.kill(pid, sig)
        deadline = time.monotonic() + (timeout if sig == signal.SIGTERM else 5)
        while time.monotonic() < deadline:
            if not pid_alive(pid):
                return
            time.sleep(0.05)


def pid_alive(pid: int) -> bool:
    try:
        waited, _status = os.waitpid(pid, os.WNOHANG)
        if waited == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is not alive for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return True


def spawn(argv: list[str], log: Path, cwd: Path, env: dict[str, str] | None = None) -> int:
    """Start a detached process in a session of its own, so stopping its group stops it all."""
    with open(log, "ab") as out:
        process = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
        )
    return process.pid


def start_server(
    name: str, argv: list[str], port: int, folder: Path, ready: Callable[[], bool], timeout: float
) -> ServerProcess:
    """Spawn a server that logs to `folder/<name>.log` and wait until `ready`; one that dies
    or does not get there in time is stopped, and the error names it with its log."""
    log = folder / f"{name}.log"
    pid = spawn(argv, log, folder)
    server = ServerProcess(name, port, pid, log)
    try:
        wait_until(ready, timeout, f"{name} on port {port}", log, alive=lambda: pid_alive(pid))
    except BaseException:
        server.stop()
        raise
    return server


@dataclass
class ServerProcess:
    name: str
    port: int
    pid: int
    log: Path

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        stop_pid(self.pid)

    def pause(self) -> None:
        os.kill(self.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.pid, signal.SIGCONT)


def start_zookeeper(
    folder: Path,
    port: int | None = None,
    fsync: bool = True,
    timeout: float = 60.0,
    container_check_ms: int | None = None,
) -> ServerProcess:
    """A standalone ZooKeeper, started the way that works here: java QuorumPeerMain with a
    config we write (Debian's zkServer.sh wrapper is unreliable). `container_check_ms`: how
    often it deletes empty container nodes (the lock parents; default a minute)."""
    if "zookeeper" in missing_servers():
        raise ServerError("ZooKeeper is not installed: apt-get install zookeeper")
    port = port or free_port()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "data").mkdir(exist_ok=True)
    config = folder / "zoo.cfg"
    config.write_text(
        "tickTime=500\n"
        "initLimit=10\nsyncLimit=5\n"
        # Sessions may be as short as 2 ticks: tests and demos expire them on purpose.
        "minSessionTimeout=1000\nmaxSessionTimeout=60000\n"
        f"dataDir={folder / 'data'}\n"
        f"clientPort={port}\nclientPortAddress=127.0.0.1\n"
        "maxClientCnxns=0\nadmin.enableServer=false\n"
        "4lw.commands.whitelist=ruok,srvr,stat,mntr\n"
        f"forceSync={'yes' if fsync else 'no'}\n"
    )
    argv = zookeeper_argv(folder, config, container_check_ms)
    return start_server("zookeeper", argv, port, folder, lambda: zk_ready(port), timeout)


def zookeeper_argv(folder: Path, config: Path, container_check_ms: int | None = None) -> list[str]:
    """One ZooKeeper server (standalone or a member), the way that works here."""
    check = (
        [f"-Dznode.container.checkIntervalMs={container_check_ms}"] if container_check_ms else []
    )
    return [
        "java",
        "-Xmx256m",
        *check,
        "-cp",
        f"{ZK_CONF_DIR}:{ZK_JAR}",
        f"-Dzookeeper.log.dir={folder}",
        ZK_MAIN,
        str(config),
    ]


def zk_ready(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"ruok")
            return s.recv(8) == b"imok"
    except OSError:
        return False


def start_redis(
    folder: Path, port: int | None = None, timeout: float = 20.0, persist: bool = False
) -> ServerProcess:
    """A redis-server of our own, loopback only; with `persist`, keeping its data in `folder`
    across restarts (redis_argv says how), as the stack's does."""
    if "redis-server" in missing_servers():
        raise ServerError("Redis is not installed: apt-get install redis-server")
    port = port or free_port()
    folder.mkdir(parents=True, exist_ok=True)
    argv = redis_argv(folder, port, persist=persist)
    return start_server("redis", argv, port, folder, lambda: redis_ready(port), timeout)


# The append-only file, written at every command and fsynced every second (Redis 7.0 has no
# WAITAOF, so a client cannot wait for the fsync). A write Redis has answered is already in
# the kernel (the AOF buffer is written before the replies go out), so it survives the server's
# restart and its kill -9; the last second of answered writes can be lost only with the
# machine (a power loss, a kernel crash), or when a slow disk holds a pending fsync and Redis
# postpones its writes (up to 2 s). `appendfsync always` would close that at an fsync per
# write; the stock events do not need it: the outbox keeps every event, and a consumer
# fetches what a stream lost from GET /stock-events (docs/ledger.md).
PERSISTENT = ["--appendonly", "yes", "--appendfsync", "everysec"]
VOLATILE = ["--appendonly", "no"]


def redis_argv(
    folder: Path, port: int, bind: str = "127.0.0.1", persist: bool = False
) -> list[str]:
    """One redis-server, with no snapshots (`save ""`); with `persist` the append-only file
    in `folder` (loaded again at the next start there), without it nothing on disk: the
    tests' servers, and the scenarios that restart Redis empty on purpose. Bound beyond
    loopback (a cluster's host), protected mode is turned off: it would refuse every client
    from another address, there being no password."""
    unprotected = ["--protected-mode", "no"] if bind != "127.0.0.1" else []
    return [
        "redis-server",
        "--bind",
        bind,
        *unprotected,
        "--port",
        str(port),
        "--save",
        "",
        *(PERSISTENT if persist else VOLATILE),
        "--dir",
        str(folder),
    ]


def redis_ready(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False
