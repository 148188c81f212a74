"""`inventory demo herd`: the article's two ZooKeeper lock designs, side by side.

"Low-efficiency" lock: one node; whoever creates it holds the lock, everyone else watches that
one node, and its deletion wakes *all* of them to race for it again (the herd effect).
"High-efficiency" lock: kazoo's Lock recipe; each waiter creates an ephemeral sequential node
and watches only its predecessor, so a release wakes exactly one waiter.

For N waiters that each acquire once, it counts the watch notifications delivered and the
requests sent to ZooKeeper, per acquisition. Each waiter is a ZooKeeper session with threads of
its own (kazoo's connection thread and two callback workers, and the thread that contends: four
per waiter), and the single node's herd costs grow with the square of the waiters: the CLI
bounds them (MAX_WAITERS in inventory/cli/commands/demo.py).

Ctrl-C or SIGTERM (raised in the main thread) stops a run promptly and quietly: the waiters'
threads are daemons that also watch a stop event, their locks are cancelled, and what they
raise once stopped is the stop's doing, not an error to print.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
from dataclasses import dataclass
from functools import partial
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import CancelledError, NodeExistsError, NoNodeError
from kazoo.recipe.lock import Lock

STOP_GRACE = 3.0  # seconds an interrupted run spends stopping its threads and sessions


class CountingClient(KazooClient):
    """A KazooClient that counts the requests its synchronous calls send."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.requests = 0
        self._count_guard = threading.Lock()

    def _count(self) -> None:
        with self._count_guard:
            self.requests += 1

    def create(self, *args: Any, **kwargs: Any) -> Any:
        self._count()
        return super().create(*args, **kwargs)

    def exists(self, *args: Any, **kwargs: Any) -> Any:
        self._count()
        return super().exists(*args, **kwargs)

    def get(self, *args: Any, **kwargs: Any) -> Any:
        self._count()
        return super().get(*args, **kwargs)

    def get_children(self, *args: Any, **kwargs: Any) -> Any:
        self._count()
        return super().get_children(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        self._count()
        return super().delete(*args, **kwargs)


class LowEfficiencyLock:
    """The article's LowLock, as written there: create one ephemeral node or watch it."""

    def __init__(self, client: CountingClient, path: str) -> None:
        self.client = client
        self.path = path
        self.notifications = 0
        self.cancelled = threading.Event()

    def acquire(self) -> None:
        while True:
            try:
                self.client.create(self.path, ephemeral=True, makepath=True)
                return
            except NodeExistsError:
                released = threading.Event()
                if self.client.exists(self.path, watch=partial(self._on_change, released)):
                    # Woken by the release, or, every 0.2 s, to see whether the run was stopped.
                    while not released.wait(0.2):
                        if self.cancelled.is_set():
                            raise CancelledError() from None

    def cancel(self) -> None:
        """As kazoo's Lock.cancel: a waiting acquire() gives up with CancelledError."""
        self.cancelled.set()

    def _on_change(self, released: threading.Event, _event: Any) -> None:
        self.notifications += 1
        released.set()

    def release(self) -> None:
        with contextlib.suppress(NoNodeError):
            self.client.delete(self.path)


class CountingLock(Lock):
    """kazoo's Lock, counting the predecessor notifications it receives."""

    notifications = 0

    def _watch_predecessor(self, event: Any) -> None:
        self.notifications += 1
        super()._watch_predecessor(event)


@dataclass
class HerdResult:
    design: str
    waiters: int
    seconds: float
    notifications: int
    requests: int

    @property
    def per_acquisition(self) -> tuple[float, float]:
        return self.notifications / self.waiters, self.requests / self.waiters


def run_design(hosts: str, design: str, waiters: int, hold: float, root: str) -> HerdResult:
    clients: list[CountingClient] = []
    locks: list[Any] = []
    threads: list[threading.Thread] = []
    stopping = threading.Event()
    start = threading.Barrier(waiters + 1)
    errors: list[BaseException] = []

    def contend(lock: Any) -> None:
        try:
            start.wait()
            lock.acquire()
            time.sleep(hold)
            lock.release()
        except BaseException as exc:  # the main thread raises the first, once
            if not stopping.is_set():  # once stopping, whatever it raises is the stop's doing
                errors.append(exc)
                start.abort()

    try:
        for _ in range(waiters):
            clients.append(CountingClient(hosts=hosts))
            clients[-1].start(timeout=10)
        if design == "low":
            locks = [LowEfficiencyLock(c, f"{root}/low/lock") for c in clients]
        else:
            clients[0].ensure_path(f"{root}/high")
            locks = [CountingLock(c, f"{root}/high") for c in clients]
        for client in clients:
            client.requests = 0  # count the contest only, not the set-up
        # Daemons: a thread still waiting on ZooKeeper never keeps the process alive.
        threads = [threading.Thread(target=contend, args=(lk,), daemon=True) for lk in locks]
        for thread in threads:
            thread.start()
        start.wait()
        began = time.perf_counter()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - began
    except BaseException:  # Ctrl-C, SIGTERM, a client that could not connect, a waiter's error
        _stop(stopping, start, locks, threads, clients)
        if errors:  # a waiter failed (and broke the barrier): its error, not the barrier's
            raise errors[0] from None
        raise
    if errors:
        _stop(stopping, start, locks, threads, clients)
        raise errors[0]
    result = HerdResult(
        design,
        waiters,
        elapsed,
        sum(lk.notifications for lk in locks),
        sum(c.requests for c in clients),
    )
    for client in clients:
        client.stop()
        client.close()
    return result


def _stop(
    stopping: threading.Event,
    start: threading.Barrier,
    locks: list[Any],
    threads: list[threading.Thread],
    clients: list[CountingClient],
) -> None:
    """Stop an interrupted run within STOP_GRACE seconds: wake every waiter (the barrier
    broken, the locks cancelled), give the threads a moment, then close the sessions (their
    lock nodes go with them). What is not done by then is left to the process's exit.

    The sessions are closed on daemon threads, all at once, and waited for only until the
    deadline: kazoo's stop() has waits without a bound (its handler joins its callback
    workers, its connection joins its thread after a 10 s wait for it), and closing them in
    turn on this thread ran past the grace: 5.1-5.3 s with ZooKeeper paused during the stop,
    3.3 s so. For the same reason the handlers not stopped by the deadline are taken off kazoo's
    atexit list (it would run their stop() again on the way out, unbounded); their threads
    are daemons and the server drops their sessions when the process's sockets close."""
    stopping.set()
    start.abort()
    for lock in locks:
        lock.cancel()
    # Half the grace for the waiters to leave, the rest (at least half) for the sessions.
    deadline = time.monotonic() + STOP_GRACE
    for thread in threads:
        thread.join(max(0.0, deadline - STOP_GRACE / 2 - time.monotonic()))
    closers = [
        threading.Thread(target=_close_quietly, args=(client,), daemon=True) for client in clients
    ]
    for closer in closers:
        closer.start()
    for closer in closers:
        closer.join(max(0.0, deadline - time.monotonic()))
    for client, closer in zip(clients, closers, strict=True):
        if closer.is_alive():
            atexit.unregister(client.handler.stop)


def _close_quietly(client: CountingClient) -> None:
    with contextlib.suppress(Exception):
        client.stop()
        client.close()


def compare(
    hosts: str, waiter_counts: list[int], hold: float
) -> list[tuple[HerdResult, HerdResult]]:
    root = f"/herd-demo/{int(time.time() * 1000)}"
    return [
        (run_design(hosts, "low", n, hold, root), run_design(hosts, "high", n, hold, root))
        for n in waiter_counts
    ]


def print_comparison(rows: list[tuple[HerdResult, HerdResult]], console: Any) -> None:
    from rich.table import Table

    table = Table(
        "waiters",
        "notified low",
        "notified high",
        "requests low",
        "requests high",
        "low / high",
        title="per acquisition: one watched node (the article's "
        "LowLock) vs kazoo's sequential Lock",
    )
    for low, high in rows:
        (ln, lr), (hn, hr) = low.per_acquisition, high.per_acquisition
        table.add_row(
            str(low.waiters),
            f"{ln:.1f}",
            f"{hn:.1f}",
            f"{lr:.1f}",
            f"{hr:.1f}",
            f"{lr / hr:.1f}x" if hr else "-",
        )
    console.print(table)
    console.print(
        "Each release of the single node wakes every waiter, and each of them sends "
        "a create and an exists again: notifications and requests per acquisition "
        "grow with the number of waiters. The sequential lock wakes only the next "
        "waiter: both stay flat."
    )
