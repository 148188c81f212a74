"""The lock interface every backend implements, and its errors.

Two ways to hold names:

    with locks.hold(names, timeout) as lease:      # all of them, or LockTimeout
        ...

    with locks.claim(names) as claim:              # combining: wait, then use what is held
        held = claim.wait(deadline)                # the names held by then (maybe all)
        lease = claim.lease(some_held_names)
        claim.release(names_no_longer_needed)      # let others have them early
        held = claim.wait(later_deadline)          # and keep waiting for the rest

A claim gives up whatever it still holds when its block ends. Names are always acquired in a
way that cannot deadlock with other claims: ZooKeeper enqueues a claim on all its names in one
atomic transaction; the other backends take names one at a time in sorted order.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field

from shared.errors import DependencyUnavailable

GLOBAL_LOCK_NAME = "global"


class LockError(DependencyUnavailable):
    """Base of the lock errors; `dependency` names what failed, for the 503 and the log."""

    dependency = "lock"


class LockTimeout(LockError):
    """The lock was not acquired within the timeout."""

    def answer(self) -> str:
        return f"lock wait timed out: {self}"


class LockUnavailable(LockError):
    """The lock service could not be reached."""

    def __init__(self, dependency: str, detail: str = "") -> None:
        super().__init__(f"{dependency} unavailable" + (f": {detail}" if detail else ""))
        self.dependency = dependency


class LockLost(LockError):
    """The lock may have passed to another holder: the write must not be committed."""

    def answer(self) -> str:
        return f"lock lost, nothing written: {self}"


def lock_names(goods_ids: Iterable[str], scope: str) -> list[str]:
    """The names to lock for a deduction: one per goods id (sorted), or the article's single
    lock around the whole method."""
    if scope == "global":
        return [GLOBAL_LOCK_NAME]
    return sorted(set(goods_ids))


@dataclass
class Lease:
    """What a holder gets: a fencing token per name and a check to call before committing."""

    tokens: dict[str, int | None] = field(default_factory=dict)
    still_held: Callable[[], bool] = lambda: True
    details: dict[str, str] = field(default_factory=dict)  # e.g. the ZooKeeper node per name

    def token_for(self, goods_id: str) -> int | None:
        if goods_id in self.tokens:
            return self.tokens[goods_id]
        return self.tokens.get(GLOBAL_LOCK_NAME)

    def check(self) -> None:
        if not self.still_held():
            raise LockLost("the lock may have been lost before commit; nothing was written")


class Claim(abc.ABC):
    """A claim on several names: some may be held, the others waited for."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = sorted(set(names))
        self.held: set[str] = set()
        # Per name waited for, when (time.monotonic()) this claim last saw its holder change
        # while it waited: the lock moving, busy but not stalled. Left empty by a backend that
        # cannot see its queue's holder.
        self.moved_at: dict[str, float] = {}

    @abc.abstractmethod
    def wait(self, deadline: float) -> frozenset[str]:
        """Wait (until time.monotonic() reaches `deadline`) for every name not yet released;
        return the names held then. Raises LockUnavailable if the lock service fails."""

    @abc.abstractmethod
    def lease(self, names: Iterable[str]) -> Lease:
        """Tokens and the still-held check for names this claim holds."""

    @abc.abstractmethod
    def release(self, names: Iterable[str]) -> None:
        """Give up these names (held or still waited for); never raises."""

    def release_all(self) -> None:
        self.release(self.names)


class LockBackend(abc.ABC):
    name: str = "abstract"
    # Whether two holders of one name exclude each other. Combining waits for exclusion; a
    # backend without it (the `none` baseline) runs every request alone and at once.
    excludes: bool = True

    @abc.abstractmethod
    def new_claim(self, names: list[str]) -> Claim:
        """A claim on `names`, already enqueued or started where the backend queues."""

    @contextmanager
    def claim(self, names: Iterable[str]) -> Iterator[Claim]:
        claim = self.new_claim(sorted(set(names)))
        try:
            yield claim
        finally:
            claim.release_all()

    def hold(self, names: list[str], timeout: float) -> AbstractContextManager[Lease]:
        """Acquire every name, yield a Lease, release them all on exit."""
        return self._hold(names, timeout)

    @contextmanager
    def _hold(self, names: list[str], timeout: float) -> Iterator[Lease]:
        deadline = time.monotonic() + timeout
        with self.claim(names) as claim:
            held = claim.wait(deadline)
            missing = [n for n in claim.names if n not in held]
            if missing:
                raise LockTimeout(f"lock {missing[0]!r} not acquired within {timeout:.1f}s")
            yield claim.lease(claim.names)

    def healthy(self) -> bool:
        return True

    def close(self) -> None:  # noqa: B027 - most backends hold nothing to close
        pass


class SequentialClaim(Claim):
    """Names taken one at a time in sorted order: a claim holds a prefix of its names and waits
    for the next. Ordered acquisition cannot deadlock, and a partial hold is a sorted prefix.
    Backends give how to take one name (returning its token and a detail) and release one."""

    def __init__(self, names: Iterable[str]) -> None:
        super().__init__(names)
        self.released: set[str] = set()
        self.tokens: dict[str, int | None] = {}
        self.details: dict[str, str] = {}

    @abc.abstractmethod
    def take(self, name: str, timeout: float) -> tuple[int | None, str] | None:
        """Take one name within `timeout` seconds: (token, detail), or None if not in time."""

    @abc.abstractmethod
    def give_back(self, name: str) -> None:
        """Release one held name; never raises."""

    @abc.abstractmethod
    def still_held(self) -> bool: ...

    def wait(self, deadline: float) -> frozenset[str]:
        for name in self.names:
            if name in self.held or name in self.released:
                continue
            taken = self.take(name, max(deadline - time.monotonic(), 0.0))
            if taken is None:
                break  # names are taken in order: the later ones wait for this one
            self.tokens[name], self.details[name] = taken
            self.held.add(name)
        return frozenset(self.held)

    def lease(self, names: Iterable[str]) -> Lease:
        chosen = sorted(names)
        return Lease(
            tokens={n: self.tokens[n] for n in chosen},
            still_held=self.still_held,
            details={n: self.details[n] for n in chosen},
        )

    def release(self, names: Iterable[str]) -> None:
        for name in sorted(set(names), reverse=True):
            if name in self.released:
                continue
            self.released.add(name)
            if name in self.held:
                self.held.discard(name)
                self.give_back(name)
