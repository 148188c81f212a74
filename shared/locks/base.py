"""The lock interface every backend implements, and its errors."""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

GLOBAL_LOCK_NAME = "global"


class LockError(Exception):
    """Base of the lock errors; `dependency` names what failed, for the 503 and the log."""

    dependency = "lock"


class LockTimeout(LockError):
    """The lock was not acquired within the timeout."""


class LockUnavailable(LockError):
    """The lock service could not be reached."""

    def __init__(self, dependency: str, detail: str = "") -> None:
        super().__init__(f"{dependency} unavailable" + (f": {detail}" if detail else ""))
        self.dependency = dependency


class LockLost(LockError):
    """The lock may have passed to another holder: the write must not be committed."""


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


class LockBackend(abc.ABC):
    name: str = "abstract"

    @abc.abstractmethod
    def hold(self, names: list[str], timeout: float) -> AbstractContextManager[Lease]:
        """Acquire every name (sorted), yield a Lease, release them all on exit."""

    def healthy(self) -> bool:
        return True

    def close(self) -> None:  # noqa: B027 - most backends hold nothing to close
        pass
