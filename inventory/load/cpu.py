"""CPU time used by processes (and their children), from /proc: to tell, per request, which
part of a path burns the machine's cores."""

from __future__ import annotations

import os
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


def children(pid: int) -> list[int]:
    kids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields and int(fields[1]) == pid:
                kids.append(int(entry.name))
    return kids


def cpu_seconds(pid: int, with_children: bool = True) -> float:
    """User + system CPU of a process, and with `with_children` of its children, live ones and
    reaped ones (a gunicorn master and its workers)."""
    fields = _stat(pid)
    if fields is None:
        return 0.0
    # fields[11:15]: utime, stime, cutime, cstime (counted from the state field at index 0)
    if not with_children:
        return sum(int(f) for f in fields[11:13]) / TICKS
    own = sum(int(f) for f in fields[11:15]) / TICKS
    return own + sum(cpu_seconds(child) for child in children(pid))


def snapshot(pids: dict[str, int], alone: frozenset[str] = frozenset()) -> dict[str, float]:
    """CPU seconds by name; names in `alone` are counted without their children."""
    return {name: cpu_seconds(pid, with_children=name not in alone) for name, pid in pids.items()}
