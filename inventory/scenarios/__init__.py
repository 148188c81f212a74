"""`inventory demo <scenario>`: each failure made to happen for real, narrated with evidence
(HTTP exchanges, Redis commands, ZooKeeper nodes, database rows, the services' own log lines),
and ended with the invariant check.

Each scenario starts a stack of its own (FAULT_INJECTION=true, short timeouts so the story
takes seconds, not minutes) in a temporary home, and stops it afterwards. rig.py holds what
they share; retries.py, holders.py, leader_loss.py and the others the scenarios
(locations.py, with shelves.py, a story of stock in several places rather than a fault;
backorders.py, with waiting.py, of backorders and reservations; flash_sale.py, with clicks.py,
of a sale with a limit per buyer; webhooks.py, of the stock events pushed to a receiver).

SCENARIOS is the one list of them: the command's choices, `make demo SCENARIO=...` and the
table of docs/scenarios.md come from it or are checked against it. It imports none of them
(`inventory --help` must not load kazoo and redis): a scenario's module is imported when it
runs, and `scenarios.stale_holder` and the like are looked up on first use (__getattr__).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from inventory.scenarios.rig import ScenarioResult


@dataclass(frozen=True)
class Scenario:
    name: str  # as the command takes it
    module: str  # under inventory.scenarios
    function: str  # called with a console, and unfenced=True for --unfenced
    shows: str  # one line: what happens for real
    unfenced: bool = False  # takes --unfenced: fencing off, to show what it prevents

    def load(self) -> Callable[..., ScenarioResult]:
        module = importlib.import_module(f"inventory.scenarios.{self.module}")
        found: Callable[..., ScenarioResult] = getattr(module, self.function)
        # The import just set the package's attribute of the module's name (`cancel`,
        # `redlock`, ...) to the module; the function takes it over, as when this file
        # imported them all, so `scenarios.cancel()` calls the scenario.
        globals()[self.function] = found
        return found


SCENARIOS = (
    Scenario(
        "double-submit",
        "retries",
        "double_submit",
        "two POST /genOrder at once with one Idempotency-Key: one order, one deduction",
    ),
    Scenario(
        "slow-stock",
        "retries",
        "slow_stock",
        "the stock service slower than the call's timeout: the retry, same flag, deducts once",
    ),
    Scenario(
        "lost-response",
        "retries",
        "lost_response",
        "the stock service commits and its answer is late: the retry is a duplicate",
    ),
    Scenario(
        "redis-flag-lost",
        "retries",
        "redis_flag_lost",
        "Redis loses the operation flag three ways: no double deduction, no lost sale",
    ),
    Scenario(
        "stale-holder",
        "holders",
        "stale_holder",
        "the lock holder paused past its ZooKeeper session: its late write refused by the fence",
        unfenced=True,
    ),
    Scenario(
        "crash-mid-deduction",
        "holders",
        "crash_mid_deduction",
        "the deducting worker killed inside its transaction: rolled back, the retry served",
    ),
    Scenario(
        "zk-leader-loss",
        "leader_loss",
        "zk_leader_loss",
        "the ZooKeeper ensemble's leader killed under a load test: a pause, no violation",
    ),
    Scenario(
        "unique-key-lock",
        "unique_key",
        "unique_key_lock",
        "LOCK_BACKEND=unique-key: a dead holder's row freed by expiry, a slow holder fenced",
        unfenced=True,
    ),
    Scenario(
        "redlock",
        "redlock",
        "redlock",
        "LOCK_BACKEND=redlock: a holder paused past the grant's validity, its write fenced",
        unfenced=True,
    ),
    Scenario(
        "standby",
        "standby",
        "standby",
        "three elected reconcilers: the leader killed, paused mid-pass, resigned; takeover timed",
    ),
    Scenario(
        "redis-failover",
        "redis_failover",
        "redis_failover",
        "LOCK_BACKEND=redis: the primary dies before the replica has the lock; the fence holds",
    ),
    Scenario(
        "cancel",
        "cancel",
        "cancel",
        "cancels and holds: the three TCC hazards, an unpaid hold, pays racing expiry",
    ),
    Scenario(
        "locations",
        "locations",
        "locations",
        "stock in two locations: an order whole from one, a line split only when none can "
        "fill it, a partial fill, a transfer received once for two receives",
    ),
    Scenario(
        "backorders",
        "backorders",
        "backorders",
        "three buyers in line for stock not yet here, filled oldest first by a restock, a fourth "
        "past the limit refused; a reservation expired by the reconciler, its units back once",
    ),
    Scenario(
        "flash-sale",
        "flash_sale",
        "flash_sale",
        "100 units, a limit of 1 per buyer, 500 buyers, 50 of them clicking five times at "
        "once: 100 buyers served, one each, every repeat click its order or a refusal",
    ),
    Scenario(
        "webhooks",
        "webhooks",
        "webhooks",
        "the stock events pushed to a receiver, signed: 503s retried, in seq order per goods id, "
        "one dead-lettered then replayed, none lost",
    ),
)
NAMES = tuple(s.name for s in SCENARIOS)
UNFENCED = tuple(s.name for s in SCENARIOS if s.unfenced)


def named(name: str) -> Scenario:
    return next(s for s in SCENARIOS if s.name == name)


def __getattr__(attribute: str) -> Callable[..., ScenarioResult]:
    """`scenarios.stale_holder` and the like, imported on first use."""
    for scenario in SCENARIOS:
        if scenario.function == attribute:
            return scenario.load()
    raise AttributeError(f"module {__name__!r} has no attribute {attribute!r}")
