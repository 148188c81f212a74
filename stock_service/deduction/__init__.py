"""Deducting under the lock: a request's flag checked, its lock waited for, its batch decided.
Above the storage and the pure core/; knows no route: api/ turns its answers into HTTP.

    steps.py            StockDeduction: reduce, reduce_many, void, return, adjust, transfer
    batched_call.py     a batched reduceStock answered within its budget
    holds.py            one lock claim for a batch of combined requests
    decide.py           under the lock: read, plan, fenced write, retried when overtaken
    lock_queue.py       the bounded queue per lock in one process
    caller_deadline.py  how long a request's caller waits for its answer
    result.py           what a deduction answers its route
    server_threads.py   how many request threads the serving process has (gunicorn's)
"""

from stock_service.deduction.batched_call import NotAttempted
from stock_service.deduction.caller_deadline import start as start_caller_deadline
from stock_service.deduction.holds import LockPolicy
from stock_service.deduction.lock_queue import LockQueueFull
from stock_service.deduction.result import DeductionResult
from stock_service.deduction.server_threads import gunicorn_threads, lock_wait_threads
from stock_service.deduction.steps import LANE, Outcome, StockDeduction

__all__ = [
    "LANE",
    "DeductionResult",
    "LockPolicy",
    "LockQueueFull",
    "NotAttempted",
    "Outcome",
    "StockDeduction",
    "gunicorn_threads",
    "lock_wait_threads",
    "start_caller_deadline",
]
