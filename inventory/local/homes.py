"""Temporary homes of the runs that start their own servers (load tests, scenarios, the bench,
the herd demo): a folder under the system's temporary directory named `inventory-*`, removed
when the run ends unless the user asked to keep it.

A run killed where it could not clean up (SIGKILL, a power cut) leaves its folder and its
servers behind. Each home records its owner (pid and start time, so a reused pid does not pass
for it); a home whose owner is gone is left behind, and `inventory status` and `down` find it.
Its processes are found by their working directory, which `servers.spawn` sets inside the
home for every server it starts, so no list of pids has to survive the crash.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from inventory.local.servers import stop_pid

PREFIX = "inventory-"
OWNER_FILE = ".owner"

# `--keep` of the command that is running: homes are kept (and their path printed).
keep_homes = False


def _start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(") ", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def mark_owner(home: Path) -> None:
    """Record this process as the home's owner (see owner_alive)."""
    (home / OWNER_FILE).write_text(f"{os.getpid()} {_start_time(os.getpid())}\n")


@contextmanager
def temporary_home(
    name: str, keep: bool | None = None, say: Callable[[str], object] = print
) -> Iterator[Path]:
    home = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{name}-"))
    mark_owner(home)
    try:
        yield home
    finally:
        if keep_homes if keep is None else keep:
            say(f"kept {home} (logs and databases of this run)")
        else:
            shutil.rmtree(home, ignore_errors=True)


@dataclass
class LeftBehind:
    home: Path
    pids: list[int]  # processes still running inside it


def owner_alive(home: Path) -> bool:
    try:
        pid_text, started = (home / OWNER_FILE).read_text().split()
        pid = int(pid_text)
    except (OSError, ValueError):
        return False
    return _start_time(pid) == started


def processes_in(home: Path) -> list[int]:
    """Pids whose working directory is the home or inside it."""
    root = str(home.resolve())
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cwd == root or cwd.startswith(root + "/"):
            found.append(int(entry.name))
    return sorted(found)


def left_behind() -> list[LeftBehind]:
    """Temporary homes of ours whose run is gone, with what still runs in them."""
    found = []
    for home in sorted(Path(tempfile.gettempdir()).glob(f"{PREFIX}*")):
        if home.is_dir() and (home / OWNER_FILE).exists() and not owner_alive(home):
            found.append(LeftBehind(home, processes_in(home)))
    return found


def clean_up(leftover: LeftBehind) -> None:
    """Stop what runs in a left-behind home, then remove the folder. Each server was spawned
    in a session of its own, so stopping its process group takes its children (gunicorn's
    workers) with it."""
    for pid in leftover.pids:
        try:
            group = os.getpgid(pid)
        except ProcessLookupError:
            continue  # gone with a group stopped before it
        stop_pid(group)
    shutil.rmtree(leftover.home, ignore_errors=True)
