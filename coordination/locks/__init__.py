"""Lock strategies behind one small interface; choosing one is configuration (LOCK_BACKEND).

    with locks.hold(["g1", "g2"], timeout=10.0) as lease:
        lease.tokens["g1"]   # fencing token for that name (None: the backend has none)
        lease.check()        # raises LockLost if the lock may have been lost; call before commit

    with locks.claim(["g1", "g2"]) as claim:   # combining: wait, use what is held, wait again
        held = claim.wait(deadline)

Several names never deadlock: ZooKeeper enqueues a claim on all its names in one transaction,
the other backends take them in sorted order (base.py says more).
Errors: LockTimeout (waited too long), LockUnavailable (the lock service is down),
LockLost (held once, no longer safe). All end a request in a 503 and nothing committed.
"""

from __future__ import annotations

from coordination.locks.base import (
    Claim,
    Lease,
    LockBackend,
    LockError,
    LockLost,
    LockTimeout,
    LockUnavailable,
    lock_names,
)
from coordination.locks.factory import make_lock_backend

__all__ = [
    "Claim",
    "Lease",
    "LockBackend",
    "LockError",
    "LockLost",
    "LockTimeout",
    "LockUnavailable",
    "lock_names",
    "make_lock_backend",
]
