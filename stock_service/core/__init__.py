"""The stock service's decision, as pure logic: given the levels, the ledger positions, the
seed versions, the decided and held flags and a batch of requests, the answer of every request
and every row the batch writes. No I/O here, and nothing of SQLAlchemy, Redis, kazoo or Flask
(tests/unit/test_layout.py holds that): stock_service/decide.py reads under the lock, asks
`batch_writes`, and applies what it says in one transaction.

    model.py          what a batch is made of: requests, decisions, shortfalls, ledger lines
    plan.py           each request decided in arrival order against the running levels
    ledger_lines.py   a plan's lines as rows: flows, returns, adjustments, stock events
    writes.py         the whole of a batch's writes, from what the hold read
    unfenced.py       the baseline's lines without the lock or the fence
"""

from stock_service.core.model import (
    REASONS,
    Adjustment,
    Decision,
    Entry,
    Kind,
    Request,
    Shortfall,
)
from stock_service.core.plan import Outcome, Plan, plan
from stock_service.core.writes import BatchState, BatchWrites, batch_writes

__all__ = [
    "REASONS",
    "Adjustment",
    "BatchState",
    "BatchWrites",
    "Decision",
    "Entry",
    "Kind",
    "Outcome",
    "Plan",
    "Request",
    "Shortfall",
    "batch_writes",
    "plan",
]
