"""Placing an order: one order's way from its request to its outcome (batched, sent to the stock
service, confirmed), its cancel and pay; the stock service's client and what its answers mean."""

from order_service.placing.answers import REJECTED, StockAnswer, StockDecision
from order_service.placing.batching import OrderBatches
from order_service.placing.cancellation import Cancellation, Outcome, UnknownOrder
from order_service.placing.client import StockClient
from order_service.placing.flags import FlagWriter
from order_service.placing.flow import OrderFlow
from order_service.placing.retry import CallPolicy

__all__ = [
    "REJECTED",
    "CallPolicy",
    "Cancellation",
    "FlagWriter",
    "OrderBatches",
    "OrderFlow",
    "Outcome",
    "StockAnswer",
    "StockClient",
    "StockDecision",
    "UnknownOrder",
]
