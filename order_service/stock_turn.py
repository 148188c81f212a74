"""Two groups of orders per process: while one batch is in its stock call (its hold on the
goods' locks, its commit), the next forms and writes its orders and flags, and then waits for
its turn to call: the lock is never idle while the order service does its own steps, and no
more than one batch of a process is in a stock call at a time, so the callers split into two
groups rather than into many small batches. A batch in trouble (a stock call to try again)
gives its turn up at once, and batches then run side by side, as before.

    with turns.taken(handle.detach) as in_trouble:
        answers = call_stock(..., in_trouble)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class StockTurns:
    def __init__(self) -> None:
        self._turn = threading.Lock()

    @contextmanager
    def taken(self, detach: Callable[[], None]) -> Iterator[Callable[[], None]]:
        """Wait for the turn, then let the lane's next batch form (`detach`) while this one
        calls; yields what the call runs when in trouble: the turn given up and the lane let
        go (both idempotent). The turn is given up when the call ends, however it ends."""
        self._turn.acquire()
        once = threading.Lock()
        given_up = False

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
