"""Loaded by the Python programs of a host whose clock is skewed (skew.py puts this folder first
on their PYTHONPATH), before anything else of theirs: `time.sleep` that works under libfaketime.

Debian's libfaketime (0.9.10) with FAKETIME_DONT_FAKE_MONOTONIC=1 breaks `time.sleep` on
Python 3.11 and later: the sleep is a `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`, whose
deadline libfaketime converts as if the monotonic clock were faked too, and the kernel refuses
the negative time it gets (OSError EINVAL on every sleep; fixed upstream after 0.9.10). The
sleep here waits in `select` with a relative timeout, which libfaketime passes through as it
is, until the real monotonic deadline. Nothing else changes: timed waits on locks and events
(`sem_clockwait`), sockets and the wall clock work as they are."""

from __future__ import annotations

import os
import select
import time

if "libfaketime" in os.environ.get("LD_PRELOAD", ""):

    def _sleep(seconds: float) -> None:
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        deadline = time.monotonic() + seconds
        while True:
            select.select([], [], [], max(0.0, deadline - time.monotonic()))
            if time.monotonic() >= deadline:
                return

    time.sleep = _sleep  # type: ignore[assignment]  # takes what the programs pass: seconds
