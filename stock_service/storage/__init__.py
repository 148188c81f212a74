"""The stock database: its tables, and the reads and writes of one hold's batch in it.
Below the capabilities beside the pure core/: it knows rows and statements, never the lock.

    tables.py           the schema (levels, ledger, decisions, outbox, locations, backorders,
                        webhooks)
    statements.py       the hot path's statements, built once
    store.py            StockStore: a batch's read under its hold, the settling reads, and
                        StockWrite: the statements of one write transaction
    location_store.py   the rows of locations, named levels, allocations and transfers
    backorder_store.py  the rows of backordered lines and their fills
"""

from stock_service.storage.backorder_store import write_backorders
from stock_service.storage.location_store import as_transfer, write_moves, write_named
from stock_service.storage.store import BatchRead, StockStore, StockWrite
from stock_service.storage.tables import (
    backorder,
    backorder_fill,
    backorder_location_limit,
    flag_decision,
    location,
    metadata,
    stock,
    stock_adjustment,
    stock_allocation,
    stock_flow,
    stock_location,
    stock_outbox,
    stock_return,
    stock_transfer,
    stock_transfer_leg,
    webhook_delivery,
    webhook_subscription,
)

__all__ = [
    "BatchRead",
    "StockStore",
    "StockWrite",
    "as_transfer",
    "backorder",
    "backorder_fill",
    "backorder_location_limit",
    "flag_decision",
    "location",
    "metadata",
    "stock",
    "stock_adjustment",
    "stock_allocation",
    "stock_flow",
    "stock_location",
    "stock_outbox",
    "stock_return",
    "stock_transfer",
    "stock_transfer_leg",
    "webhook_delivery",
    "webhook_subscription",
    "write_backorders",
    "write_moves",
    "write_named",
]
