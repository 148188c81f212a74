"""Waiting on a condition instead of sleeping and hoping: a test that must let another thread or
process reach a point polls for the point itself, with a generous deadline (the machine is
shared: 2 cores, other people's tests), and fails loudly, saying what never happened."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_for(
    check: Callable[[], object], what: str, timeout: float = 30.0, interval: float = 0.005
) -> None:
    """Return as soon as `check()` is true; fail the test if it is not within `timeout` s."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:g} s")
        time.sleep(interval)
