"""`inventory demo <scenario>`: each failure made to happen for real, narrated with evidence
(HTTP exchanges, Redis commands, ZooKeeper nodes, database rows, the services' own log lines),
and ended with the invariant check.

Each scenario starts a stack of its own (FAULT_INJECTION=true, short timeouts so the story
takes seconds, not minutes) in a temporary home, and stops it afterwards. rig.py holds what
they share; retries.py, holders.py and leader_loss.py the scenarios.
"""

from __future__ import annotations

from collections.abc import Callable

from inventory.scenarios.cancel import cancel
from inventory.scenarios.holders import crash_mid_deduction, stale_holder
from inventory.scenarios.leader_loss import zk_leader_loss
from inventory.scenarios.redis_failover import redis_failover
from inventory.scenarios.redlock import redlock
from inventory.scenarios.retries import double_submit, lost_response, redis_flag_lost, slow_stock
from inventory.scenarios.rig import ScenarioResult
from inventory.scenarios.standby import standby
from inventory.scenarios.unique_key import unique_key_lock

__all__ = [
    "SCENARIOS",
    "UNFENCED",
    "ScenarioResult",
    "cancel",
    "crash_mid_deduction",
    "double_submit",
    "lost_response",
    "redis_failover",
    "redis_flag_lost",
    "redlock",
    "slow_stock",
    "stale_holder",
    "standby",
    "unique_key_lock",
    "zk_leader_loss",
]

SCENARIOS: dict[str, Callable[..., ScenarioResult]] = {
    "double-submit": double_submit,
    "slow-stock": slow_stock,
    "lost-response": lost_response,
    "redis-flag-lost": redis_flag_lost,
    "stale-holder": stale_holder,
    "crash-mid-deduction": crash_mid_deduction,
    "zk-leader-loss": zk_leader_loss,
    "unique-key-lock": unique_key_lock,
    "redlock": redlock,
    "standby": standby,
    "redis-failover": redis_failover,
    "cancel": cancel,
}
# The scenarios that take unfenced=True (`--unfenced`): fencing off, to show what it prevents.
UNFENCED = ("stale-holder", "unique-key-lock", "redlock")
