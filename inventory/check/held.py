"""I8's held units: a hold's units are counted as held (the stock row's `held`, GET /stock's)
from its deduction until it is paid or its stock comes back, and stop being held exactly once,
whichever comes first: a release racing a return must not subtract them twice. So, per goods
id, the row's held count equals the units of the flags still held (deducted by an unpaid hold,
neither released nor returned), and is never below zero."""

from __future__ import annotations

from inventory.check.result import CheckResult
from inventory.check.snapshot import Snapshot


def check_held_once(snap: Snapshot) -> CheckResult:
    off = {g: {"held": n, "by_flags": f} for g, (n, f) in snap.held.items() if n != f or n < 0}
    shown = ", ".join(
        f"{g}: held {v['held']}, flags {v['by_flags']}" for g, v in list(off.items())[:5]
    )
    return CheckResult(
        "I8",
        "held units counted once",
        not off,
        f"{len(snap.held)} goods: held = the units of the flags still held"
        + (f"; {len(off)} differ: {shown}" if off else ""),
        {"goods": len(snap.held), "differ": off},
    )
