"""The one-database peer (inventory/bench/peer/) as the latency bench runs it on the cluster's
order hosts: the same app, and a record of how long each order held its stock row's lock.

The peer's transaction takes the row lock with its UPDATE and keeps it until its COMMIT has
returned, which on the cluster means the standby has the commit too: the row lock's hold is
the inserts after the UPDATE, the commit's round trip, the standby's round trip and the fsyncs.
Measured here, in the peer's own threads under load, by SQLAlchemy's cursor events: from the
UPDATE's return to the end of the request (its commit returned, its answer built: a few
microseconds later). The client sees the UPDATE's return one link later than the server took
the lock, and the commit's return one link later than the server let it go, so the duration
is the server's hold. The time the UPDATE took (its round trip and any wait for the lock) is
recorded beside it.

Each worker appends `wall-clock end, hold s, update s` lines to its own file in
PEER_HOLDS_DIR; the bench keeps those in a load's window.

Under gunicorn: `inventory.cluster.latency_peer:create_app()`, the database in
PEER_DATABASE_URL (as the peer).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from flask import Flask, Response

from inventory.bench.peer import app as peer_app

_DEDUCT_PREFIX = "UPDATE peer_stock"
_now = threading.local()


def _after_execute(
    conn: Any, cursor: Any, statement: str, params: Any, context: Any, executemany: bool
) -> None:
    if statement.startswith(_DEDUCT_PREFIX) and getattr(_now, "locked", None) is None:
        _now.locked = time.perf_counter()
        _now.update = _now.locked - getattr(_now, "sent", _now.locked)


def _before_execute(
    conn: Any, cursor: Any, statement: str, params: Any, context: Any, executemany: bool
) -> None:
    if statement.startswith(_DEDUCT_PREFIX) and getattr(_now, "locked", None) is None:
        _now.sent = time.perf_counter()


def create_app() -> Flask:
    folder = Path(os.environ["PEER_HOLDS_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    record = (folder / f"holds-{os.getpid()}.txt").open("a", buffering=1)
    lock = threading.Lock()
    # Class-level: the engine the peer's app makes for itself gets them too.
    sa.event.listen(sa.Engine, "before_cursor_execute", _before_execute)
    sa.event.listen(sa.Engine, "after_cursor_execute", _after_execute)
    app = peer_app.create_app()

    @app.before_request
    def forget() -> None:
        _now.locked = None

    @app.after_request
    def held(response: Response) -> Response:
        locked = getattr(_now, "locked", None)
        if locked is not None and response.status_code == 200:
            hold = time.perf_counter() - locked
            with lock:
                record.write(f"{time.time():.6f} {hold:.6f} {_now.update:.6f}\n")
        return response

    return app


def read_holds(folder: Path, start: float, end: float) -> tuple[list[float], list[float]]:
    """The holds and the UPDATEs' times (seconds) of the orders that ended in [start, end]."""
    holds, updates = [], []
    for path in folder.glob("holds-*.txt"):
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) == 3 and start <= float(parts[0]) <= end:
                holds.append(float(parts[1]))
                updates.append(float(parts[2]))
    return holds, updates
