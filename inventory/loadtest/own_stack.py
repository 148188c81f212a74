"""The stack a load test starts for itself (`inventory loadtest --lock ...`): its settings, and
its start with what the run needs running (reconcilers for holds and cancels, relays for the
stock events, the meeting of `--line-up`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from inventory.loadtest.buyers import LoadConfig
from inventory.loadtest.line_up import line_up
from inventory.local import stack
from inventory.local.stack_state import StackState


def own_stack_env(
    config: LoadConfig, lock: str | None, scope: str | None, lined_up: bool
) -> dict[str, str]:
    env = {"LOCK_BACKEND": lock or "zookeeper", "LOCK_SCOPE": scope or "sku"}
    # Holds expire and unanswered cancels finish by the stack's own elected reconcilers (a
    # pass every second; holds by their deadline, the rest once older than a request's budget).
    if config.cancel_rate or config.pay_within:
        env.update(RECONCILE_INTERVAL="1")
    if lined_up:
        env.update(FAULT_INJECTION="true")
    if env["LOCK_BACKEND"] == "none":
        # The baseline shows the race a lock prevents: orders placed as they come, not held
        # for companions, so that many stock calls meet (a wait would make a few big ones).
        env.update(ORDER_BATCH_WAIT_MS="0")
    return env


def starting(
    home: Path, env: dict[str, str], config: LoadConfig, say: Callable[..., None]
) -> StackState:
    """The stack up (stack.SettingsError on a bad setting), and lined up if asked."""
    say(f"starting a stack for this run (lock {env['LOCK_BACKEND']}/{env['LOCK_SCOPE']}) ...")
    after_sale = bool(config.cancel_rate or config.pay_within)
    # Two relays, as `inventory up` starts: the run's stock events are checked (I10).
    state = stack.up(
        home=home, extra_env=env, say=say, reconcilers=2 if after_sale else 0, relays=2
    )
    if env.get("FAULT_INJECTION") == "true":
        line_up(state)
        say("every two deductions meet after their reads (pair_after_read)")
    return state
