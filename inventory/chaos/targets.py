"""Pausing the stock worker that is inside its write transaction, and proving it was.

A write transaction lasts a few milliseconds, so the search is built to stop a writer before it
commits, and then to check that it did:
- pg_stat_activity names every connection whose transaction has written (it has an xid), and
  its application_name says which process opened it (`stock pid <pid>`, shared/database/engines.py):
  the client address would be the load balancer's, the stock service reaching PostgreSQL through
  haproxy;
- SIGSTOP at once; then pgrowlocks (PostgreSQL's contrib extension) says which stock rows the
  stopped backend holds. No row held: it committed before the signal landed, so SIGCONT and try
  again. A row of a hot goods id is preferred, since other buyers are sure to need it during the
  pause; after half the search any row will do.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from typing import Any

from inventory.cluster import pg_ha, topology
from inventory.cluster.deploy import ClusterState

WRITERS = (
    "SELECT pid, application_name FROM pg_stat_activity "
    "WHERE datname = 'stock' AND backend_xid IS NOT NULL AND application_name LIKE 'stock pid %'"
)
ROWS_HELD = (
    "SELECT s.goods_id FROM pgrowlocks('stock') AS r JOIN stock AS s ON s.ctid = r.locked_row "
    "WHERE %s = ANY(r.pids) ORDER BY s.goods_id"
)
BLOCKED_BEHIND = (
    "SELECT count(*) FROM pg_stat_activity WHERE datname = 'stock' "
    "AND %s = ANY(pg_blocking_pids(pid))"
)
STATE = "SELECT state FROM pg_stat_activity WHERE pid = %s AND backend_xid IS NOT NULL"
HOT = "-hot"  # the workload's hot goods ids contain this (inventory/chaos/workload.py)


@dataclass
class Paused:
    replica: str
    pid: int  # the stopped gunicorn worker
    backend: int  # its PostgreSQL backend, which holds the rows until the worker commits
    rows: list[str]  # goods ids whose rows it has written and not committed
    attempts: int  # signals sent until one landed inside the transaction


def pause_writer(state: ClusterState, within: float) -> Paused | None:
    """SIGSTOP a stock worker inside its write transaction, verified; None if none was caught
    within `within` seconds (the worker is then running: every miss got its SIGCONT)."""
    import psycopg

    started = time.monotonic()
    deadline = started + within
    owners = _workers(state)
    attempts = 0
    with psycopg.connect(pg_ha.libpq("stock", state.secrets), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pgrowlocks")
        while time.monotonic() < deadline:
            any_row = time.monotonic() > started + within / 2
            for backend, application in conn.execute(WRITERS).fetchall():
                pid = int(application.rsplit(" ", 1)[1])
                if pid not in owners:
                    owners = _workers(state)  # a worker started since: look again
                    if pid not in owners:
                        continue
                replica = owners[pid]
                attempts += 1
                _signal(pid, signal.SIGSTOP)
                rows = _rows_held(conn, backend, pid)
                if rows and (any_row or any(HOT in g for g in rows)):
                    return Paused(replica, pid, backend, rows, attempts)
                _signal(pid, signal.SIGCONT)
            time.sleep(0.001)
    return None


def resume(state: ClusterState, paused: Paused) -> int:
    """SIGCONT; returns how many other transactions were waiting for its rows just before."""
    import psycopg

    blocked = 0
    with (
        contextlib.suppress(psycopg.Error),
        psycopg.connect(pg_ha.libpq("stock", state.secrets)) as conn,
    ):
        blocked = int(conn.execute(BLOCKED_BEHIND, (paused.backend,)).fetchone()[0])  # type: ignore[index]
    _signal(paused.pid, signal.SIGCONT)
    return blocked


def _rows_held(conn: Any, backend: int, pid: int) -> list[str]:
    """The stock rows `backend` holds once the worker is stopped, or [] if its transaction
    ended. A signal takes effect a little after kill() returns (/proc says when: state T), and
    a COMMIT already on the wire still lands, so the backend must be found waiting for its
    stopped client ('idle in transaction') a moment after the stop, rows still held."""
    for _ in range(100):
        if _stopped(pid):
            break
        time.sleep(0.0005)
    time.sleep(0.02)
    state = conn.execute(STATE, (backend,)).fetchone()
    if state is None or state[0] != "idle in transaction":
        return []
    return [g for (g,) in conn.execute(ROWS_HELD, (backend,)).fetchall()]


def _stopped(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "T"
    except OSError:
        return True  # gone: nothing more will run


def _workers(state: ClusterState) -> dict[int, str]:
    """pid of each stock worker -> its replica."""
    return {pid: h.name for h in topology.by_role("stock") for pid in state.proc(h.name).workers()}


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
