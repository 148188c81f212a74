"""The stock service's store and decision core driven by a stateful property test, on each
database (SQLite, PostgreSQL, MariaDB): every way stock moves, inputs at their limits, a stale
lock holder interleaved with a newer one, and the invariants read from the database after
every step (tests/stock_machine.py, tests/stock_machine_moves.py, tests/stock_invariants.py).

A few hundred steps per database by default. To run it long (docs/getting-started.md):

    STOCK_STATEFUL_EXAMPLES=500 STOCK_STATEFUL_STEPS=60 .venv/bin/pytest \\
        tests/integration/test_stock_stateful.py --databases postgresql,mysql -x

Each counterexample it found is kept as a plain test of its own in
tests/integration/test_stock_stateful_regressions.py."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from tests.stock_machine_moves import StockStateMachine
from tests.stock_stack import Stack, stack

__all__ = ["stack"]  # the fixture, found by pytest in this module

EXAMPLES = int(os.environ.get("STOCK_STATEFUL_EXAMPLES", "30"))
STEPS = int(os.environ.get("STOCK_STATEFUL_STEPS", "40"))
# 0: report a counterexample as found, unshrunk (shrinking replays it many times, each step a
# real request to a real database: minutes).
SHRINK = os.environ.get("STOCK_STATEFUL_SHRINK", "1") != "0"
PHASES = [p for p in Phase if SHRINK or p is not Phase.shrink]


def test_every_way_stock_moves_keeps_the_invariants(stack: Stack) -> None:
    machine = type(f"StockOn{stack.backend.title()}", (StockStateMachine,), {"stack": stack})
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            database=None,
            phases=PHASES,
            suppress_health_check=list(HealthCheck),
        ),
    )
