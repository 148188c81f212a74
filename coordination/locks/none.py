"""LOCK_BACKEND=none: no lock at all. The baseline that shows the oversell a lock prevents."""

from __future__ import annotations

from collections.abc import Iterable

from coordination.locks.base import Claim, Lease, LockBackend


class NoClaim(Claim):
    """Every name is "held" at once, by everybody: nothing excludes anything."""

    def wait(self, deadline: float) -> frozenset[str]:
        self.held = set(self.names)
        return frozenset(self.held)

    def lease(self, names: Iterable[str]) -> Lease:
        return Lease(tokens={name: None for name in names})

    def release(self, names: Iterable[str]) -> None:
        self.held -= set(names)


class NoLock(LockBackend):
    name = "none"
    excludes = False

    def new_claim(self, names: list[str]) -> NoClaim:
        return NoClaim(names)
