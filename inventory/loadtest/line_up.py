"""`inventory loadtest --line-up`: every two deductions meet after their reads (the stock
service's fault point pair_after_read, shared/faults.py), on a stack of the run's own started
with FAULT_INJECTION. Without a lock (or without the fence) the two then write the level each
read less its own sale, and one of the two sales is lost from the level: the baseline shows the
oversell a lock prevents in every run, not only when the machine's timing lines two buyers up.
With a lock and the fence the meeting changes nothing: each pair is served one after the other
or refused by the fence, and the check stays valid."""

from __future__ import annotations

import httpx

from inventory.local.stack_state import StackState

POINT = "pair_after_read"
PATIENCE = 0.5  # seconds the first of a pair waits for the second (the last one waits alone)
TIMES = 1000  # firings armed at once, the most PUT /faults takes: one per deduction's read


def line_up(state: StackState, times: int = TIMES) -> None:
    """Arm the meeting for the next `times` reads of the stack's stock service (0: disarm it,
    for a Redis the stack shares with others)."""
    httpx.put(
        f"{state.stock_url}/faults/{POINT}",
        json={"value": PATIENCE, "times": times},
        headers=state.admin_headers(),
        timeout=10,
    ).raise_for_status()
