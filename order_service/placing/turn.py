"""Two groups of orders per process, when a stock call is long: a batch whose stock call (its
hold on the goods' locks, its commit) has run LONG_CALL lets the next batch form and write its
orders and flags, which then waits for its turn to call. No more than one batch of a process is
in a stock call at a time, so the callers split into two groups rather than into many small
batches. A call shorter than that (the common case under load: a hold of 10-25 ms and the HTTP
around it) keeps the lane, as one group did before: the callers it answers come back within the
companion wait and the next batch takes them all, where a group formed at every call's start
split them into two smaller batches, each paying its transactions, pipeline, call and hold (more
CPU per order, on cores the lock's idle time does not free). A batch in trouble (a stock call to
try again) gives its turn up and lets the lane go at once, and batches then run side by side, as
before; and a batch waits for its turn at most TURN_PATIENCE: a call stuck on a stalled goods
id's lock (a lone order takes the single route, which waits up to its own deadline) holds the
next group up no longer than LONG_CALL + TURN_PATIENCE.

    with turns.taken(handle.detach) as in_trouble:
        answers = call_stock(..., in_trouble)
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)

# Well above a stock call's usual length under load (a hold of 10-25 ms, and the HTTP around
# it), well under a buyer's patience: a group waits this long for the one before, then calls.
TURN_PATIENCE = 0.25
# A call still running after this is not the usual one (a lock queue, a stall): the next group
# forms beside it. Several usual calls long, so that a busy machine's slower calls keep their
# batches whole; short beside the buyers' 2 s, so the next group is held up at most this plus
# TURN_PATIENCE behind a stuck call.
LONG_CALL = 0.1


class StockTurns:
    def __init__(self, patience: float = TURN_PATIENCE, long_call: float = LONG_CALL) -> None:
        self._turn = threading.Lock()
        self.patience = patience
        self.long_call = long_call
        self._watch = _Watch()

    @contextmanager
    def taken(self, detach: Callable[[], None]) -> Iterator[Callable[[], None]]:
        """Wait for the turn; once the call has run `long_call`, let the lane's next batch form
        (`detach`, idempotent and safe from another thread). Yields what the call runs when in
        trouble: the turn given up and the lane let go at once (both idempotent). The turn is
        given up when the call ends, however it ends; one not had within the patience is not
        waited for longer (this call goes beside)."""
        had = self._turn.acquire(timeout=self.patience)
        once = threading.Lock()
        given_up = not had

        def give_up() -> None:
            nonlocal given_up
            with once:
                if given_up:
                    return
                given_up = True
            self._turn.release()

        def in_trouble() -> None:
            give_up()
            detach()

        ticket = self._watch.after(self.long_call, detach)
        try:
            yield in_trouble
        finally:
            self._watch.cancel(ticket)
            give_up()


class _Watch:
    """One thread per process that runs what a long call is due (its lane let go): a timer
    thread per call would cost a thread's start on every batch for the rare long one."""

    def __init__(self) -> None:
        self._due: list[tuple[float, int, Callable[[], None]]] = []
        self._tickets = itertools.count()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def after(self, seconds: float, task: Callable[[], None]) -> int:
        if seconds <= 0:
            task()
            return -1
        ticket = next(self._tickets)
        with self._changed:
            heapq.heappush(self._due, (time.monotonic() + seconds, ticket, task))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="long-calls", daemon=True)
                self._thread.start()
            elif self._due[0][1] == ticket:
                self._changed.notify()
        return ticket

    def cancel(self, ticket: int) -> None:
        """The call ended: its task is not run."""
        if ticket >= 0:
            with self._changed:
                kept = [entry for entry in self._due if entry[1] != ticket]
                if len(kept) != len(self._due):
                    heapq.heapify(kept)
                    self._due = kept

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._due or self._due[0][0] > time.monotonic():
                    self._changed.wait(self._due[0][0] - time.monotonic() if self._due else None)
                _, _, task = heapq.heappop(self._due)
            try:
                task()
            except Exception:  # a lane let go late must not end the watch for every other call
                log.exception("letting a long call's lane go failed")
