"""The order service's HTTP face: the routes of orders and reservations, their request and
answer schemas, the dashboard; turns a request into calls of the capabilities below, no rules."""

from order_service.api.buyer_limits import buyer_limit_routes
from order_service.api.dashboard import dashboard_bp
from order_service.api.deps import OrderDeps
from order_service.api.reservations import reservation_routes
from order_service.api.routes import order_routes

__all__ = [
    "OrderDeps",
    "buyer_limit_routes",
    "dashboard_bp",
    "order_routes",
    "reservation_routes",
]
