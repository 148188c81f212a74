"""The stock service's HTTP face: the routes, their request and answer schemas, their guards.
Above the capabilities: each route checks its input and calls one of them, nothing stored here.

    stock.py             reduceStock (one flag, a batch), the stock flow, a level read and set,
                         and how the answers carry the rows
    wants.py             a reduceStock body made a deduction request, and its checks
    settle.py            a flag's decision, its void, its return, a hold's release
    ledger.py            adjustments, history, thresholds, policies
    events.py            GET /stock-events
    locations.py         the locations, and a level seeded at one
    transfers.py         transfers between locations
    faults.py            PUT /faults/{point}
    schemas.py           the contract of the stock routes
    ledger_schemas.py    the contract of the ledger's routes
    location_schemas.py  the contract of the locations' and transfers' routes
    waits.py             every route's waits for a lock, and the 503 of a full queue
    admin.py             the service routes' guard (the admin routes': shared/web/admin_auth.py)
    deps.py              StockDeps: what the handlers need, built by create_app
    subscriptions/       the webhooks' subscriptions, dead letters and replays (admin)
"""

from stock_service.api.admin import service_guard
from stock_service.api.deps import StockDeps
from stock_service.api.events import events_routes
from stock_service.api.faults import fault_routes
from stock_service.api.ledger import ledger_routes
from stock_service.api.locations import location_routes
from stock_service.api.schemas import input_models
from stock_service.api.settle import settle_routes
from stock_service.api.stock import SERVICE_ROUTES, stock_routes
from stock_service.api.subscriptions import subscription_routes
from stock_service.api.transfers import transfer_routes

__all__ = [
    "SERVICE_ROUTES",
    "StockDeps",
    "events_routes",
    "fault_routes",
    "input_models",
    "ledger_routes",
    "location_routes",
    "service_guard",
    "settle_routes",
    "stock_routes",
    "subscription_routes",
    "transfer_routes",
]
