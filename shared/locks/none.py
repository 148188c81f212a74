"""LOCK_BACKEND=none: no lock at all. The baseline that shows the oversell a lock prevents."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from shared.locks.base import Lease, LockBackend


class NoLock(LockBackend):
    name = "none"

    @contextmanager
    def hold(self, names: list[str], timeout: float) -> Iterator[Lease]:
        yield Lease(tokens={name: None for name in names})
