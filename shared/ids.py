"""Ids unique across replicas without coordination.

A snowflake id needs a worker number per replica, which someone must hand out. A time prefix
(for ordering and readability) plus 64 random bits needs nothing: two replicas collide only with
probability about n^2 / 2^65 for n ids in the same millisecond.
"""

from __future__ import annotations

import secrets
import time


def new_id() -> str:
    """A 29-character, time-ordered id: 13 digits of Unix milliseconds and 16 hex digits."""
    return f"{time.time_ns() // 1_000_000:013d}{secrets.randbits(64):016x}"
