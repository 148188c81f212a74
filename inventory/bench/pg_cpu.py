"""The CPU of a PostgreSQL server spent on one database: the bench's own.

The server is shared (other users of the machine run their tests on it), so its processes are
not counted whole. PostgreSQL serves each connection with a process of its own (a backend),
and pg_stat_activity names the database and the application of each: the backends of the
bench's database are the bench's. Their CPU is read from /proc (utime + stime), which works
where the server runs on this machine, in this pid namespace; elsewhere it is not counted, and
the bench says so.

A connection pool opens and closes connections under load (SQLAlchemy's overflow beyond
pool_size), so backends come and go during a load. A sampler thread lists them every
`interval` seconds: a backend born during the load is counted from zero (its start-up too),
one that lived before from its value at the start, and one that exits is counted up to its
last sample (what it burnt after that is lost, and the count of such exits is reported).
Not counted: the server's shared processes (WAL writer, checkpointer, background writer),
which work for every database at once; nor the sampler's own backend.

Grouped by application_name up to " pid" (shared/database/engines.py names connections `order pid
N`, `stock pid N`; the peer's `peer pid N`): `postgres order`, `postgres stock`, `postgres peer`;
autovacuum and anything unnamed is `postgres other`."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa

from inventory.load.cpu import TICKS

_BACKENDS = sa.text(
    "SELECT pid, application_name FROM pg_stat_activity "
    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
)


def _times(pid: int) -> tuple[float, int] | None:
    """(user + system CPU seconds, start time in ticks after boot) of a live process."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICKS, int(fields[19])


def _ticks_since_boot() -> int:
    return int(float(Path("/proc/uptime").read_text().split()[0]) * TICKS)


def group(application: str) -> str:
    name = application.split(" pid ", 1)[0].strip()
    return f"postgres {name}" if name else "postgres other"


@dataclass
class _Backend:
    group: str
    base: float
    last: float


@dataclass
class Attribution:
    """What the samplers saw over every load: backends seen, and those that exited between
    two samples (their last moments not counted)."""

    seen: set[int] = field(default_factory=set)
    exited: int = 0
    samples: int = 0


class DatabaseCpu:
    """CPU seconds of the backends of one PostgreSQL database, by application, over a load:
    `start()` before it, `stop()` after it."""

    def __init__(self, url: str, interval: float = 0.05) -> None:
        self.engine = sa.create_engine(url, isolation_level="AUTOCOMMIT", poolclass=sa.NullPool)
        self.interval = interval
        self.attribution = Attribution()
        self._backends: dict[int, _Backend] = {}
        self._gone: set[int] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._conn: sa.Connection | None = None
        self._started_ticks = 0

    @classmethod
    def of(cls, url: str) -> tuple[DatabaseCpu | None, str]:
        """A sampler of that database, or None and why not (not PostgreSQL; a server whose
        processes are not this machine's)."""
        if sa.make_url(url).get_backend_name() != "postgresql":
            return None, ""
        sampler = cls(url)
        with sampler.engine.connect() as conn:  # its backend read while it is alive
            pid, database = conn.execute(
                sa.text("SELECT pg_backend_pid(), current_database()")
            ).one()
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            except OSError:
                cmdline = ""
        if database not in cmdline:  # its backend is not a process this machine shows
            sampler.engine.dispose()
            return None, (
                "PostgreSQL's CPU not counted: its server's processes are not this machine's "
                f"(backend {pid} not in /proc)"
            )
        return sampler, (
            "PostgreSQL's CPU: the backends of the bench's own database only (pg_stat_activity "
            f"by datname, sampled every {sampler.interval * 1000:.0f} ms, CPU from /proc), by "
            "application_name; the server's shared processes (WAL writer, checkpointer) and "
            "other databases' backends not counted"
        )

    def start(self) -> None:
        self._backends = {}
        self._gone = set()
        self._stop.clear()
        self._conn = self.engine.connect()
        self._started_ticks = _ticks_since_boot()
        self._sample(first=True)
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def stop(self) -> dict[str, float]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample(first=False)
        if self._conn is not None:
            self._conn.close()
        out: dict[str, float] = {}
        for backend in self._backends.values():
            out[backend.group] = out.get(backend.group, 0.0) + backend.last - backend.base
        return out

    def close(self) -> None:
        self.engine.dispose()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample(first=False)

    def _sample(self, first: bool) -> None:
        assert self._conn is not None
        listed = self._conn.execute(_BACKENDS).all()
        self.attribution.samples += 1
        live = set()
        for pid, application in listed:
            times = _times(pid)
            if times is None:
                continue
            live.add(pid)
            seconds, started = times
            backend = self._backends.get(pid)
            if backend is None:
                born_during = not first and started >= self._started_ticks
                base = 0.0 if born_during else seconds
                self._backends[pid] = _Backend(group(application or ""), base, seconds)
                self.attribution.seen.add(pid)
            else:
                backend.last = seconds
        for pid in self._backends.keys() - live - self._gone:
            self._gone.add(pid)  # exited: counted up to its last sample
            self.attribution.exited += 1
