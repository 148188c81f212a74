"""The order service: owns the order database, places orders, confirms them by the stock flow.

Served by gunicorn as `'order_service:create_app()'`.
"""

from order_service.app import create_app

__all__ = ["create_app"]
