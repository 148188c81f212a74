"""The stock service: owns the stock database and deducts under the lock.

Served by gunicorn as `'stock_service:create_app()'`.
"""

from stock_service.app import create_app

__all__ = ["create_app"]
