"""Two groups of orders per process: while one batch is in its stock call (its hold on the
goods' locks, its commit), the next forms and writes its orders and flags, and then waits for
its turn to call: the lock is never idle while the order service does its own steps, and no
more than one batch of a process is in a stock call at a time, so the callers split into two
groups rather than into many small batches. A batch in trouble (a stock call to try again)
gives its turn up at once, and batches then run side by side, as before; and a batch waits
for its turn at most TURN_PATIENCE: a call stuck on a stalled goods id's lock (a lone order
takes the single route, which waits up to its own deadline) holds the next group up no longer.

    with turns.taken(handle.detach) as in_trouble:
        answers = call_stock(..., in_trouble)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

# Well above a stock call's usual length under load (a hold of 10-25 ms, and the HTTP around
# it), well under a buyer's patience: a group waits this long for the one before, then calls.
TURN_PATIENCE = 0.25


class StockTurns:
    def __init__(self, patience: float = TURN_PATIENCE) -> None:
        self._turn = threading.Lock()
        self.patience = patience

    @contextmanager
    def taken(self, detach: Callable[[], None]) -> Iterator[Callable[[], None]]:
        """Wait for the turn, then let the lane's next batch form (`detach`) while this one
        calls; yields what the call runs when in trouble: the turn given up and the lane let
        go (both idempotent). The turn is given up when the call ends, however it ends; one
        not had within the patience is not waited for longer (this call goes beside)."""
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

        try:
            detach()
            yield in_trouble
        finally:
            give_up()
