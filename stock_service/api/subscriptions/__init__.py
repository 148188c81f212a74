"""The webhooks' admin routes: the subscriptions, their dead letters and replays.

routes.py   POST, GET, DELETE /subscriptions, GET .../failed, POST .../failed/replay
schemas.py  their contract
"""

from stock_service.api.subscriptions.routes import subscription_routes

__all__ = ["subscription_routes"]
