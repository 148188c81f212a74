"""Lock strategies behind one small interface; choosing one is configuration (LOCK_BACKEND).

    with locks.hold(["g1", "g2"], timeout=10.0) as lease:
        lease.tokens["g1"]   # fencing token for that name (None: the backend has none)
        lease.check()        # raises LockLost if the lock may have been lost; call before commit

Names are taken in sorted order so two holders of overlapping sets never deadlock.
Errors: LockTimeout (waited too long), LockUnavailable (the lock service is down),
LockLost (held once, no longer safe). All end a request in a 503 and nothing committed.
"""

from __future__ import annotations

from shared.locks.base import (
    Lease,
    LockBackend,
    LockError,
    LockLost,
    LockTimeout,
    LockUnavailable,
    lock_names,
)
from shared.locks.factory import make_lock_backend

__all__ = [
    "Lease",
    "LockBackend",
    "LockError",
    "LockLost",
    "LockTimeout",
    "LockUnavailable",
    "lock_names",
    "make_lock_backend",
]
