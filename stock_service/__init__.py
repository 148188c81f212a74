"""The stock service: owns the stock database and deducts under the lock.
A service of its own behind HTTP: it imports shared/ and coordination/, never order_service/.

Served by gunicorn as `'stock_service:create_app()'`.
"""

from stock_service.app import create_app

__all__ = ["create_app"]
