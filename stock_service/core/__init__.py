"""The stock service's decision as pure logic: what a batch answers and writes, from what it read.
The bottom layer: no I/O, nothing of SQLAlchemy, Redis, kazoo or Flask (tests/unit/test_layout.py).

Given the levels, the ledger positions, the seed versions, the decided and held flags and a batch
of requests, the answer of every request and every row the batch writes:
stock_service/deduction/decide.py reads under the lock, asks `batch_writes`, and applies what it
says in one transaction.

    model.py          what a batch is made of: requests, decisions, shortfalls, ledger lines
    plan.py           each request decided in arrival order against the running levels
    ledger_lines.py   a plan's lines as rows: flows, returns, adjustments, stock events
    writes.py         the whole of a batch's writes, from what the hold read
    unfenced.py       the baseline's lines without the lock or the fence
"""

from stock_service.core.backorders import Backorders, Waiting
from stock_service.core.ledger_lines import EVENT_KINDS
from stock_service.core.model import (
    REASONS,
    Adjustment,
    Decision,
    Entry,
    Kind,
    Request,
    Shortfall,
    TransferLeg,
)
from stock_service.core.places import DEFAULT, DEFAULT_PLACE, Place, parts_of
from stock_service.core.plan import Outcome, Plan, plan
from stock_service.core.transfers import IN_TRANSIT, Transfer
from stock_service.core.unfenced import renumber, renumber_give_ups
from stock_service.core.writes import BatchState, BatchWrites, attach_flows, batch_writes

__all__ = [
    "DEFAULT",
    "DEFAULT_PLACE",
    "EVENT_KINDS",
    "IN_TRANSIT",
    "REASONS",
    "Adjustment",
    "Backorders",
    "BatchState",
    "BatchWrites",
    "Decision",
    "Entry",
    "Kind",
    "Outcome",
    "Place",
    "Plan",
    "Request",
    "Shortfall",
    "Transfer",
    "TransferLeg",
    "Waiting",
    "attach_flows",
    "batch_writes",
    "parts_of",
    "plan",
    "renumber",
    "renumber_give_ups",
]
