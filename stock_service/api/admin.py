"""The guards of the stock service's routes: the admin routes' (shared/web/admin_auth.py, one for
both services), and the service token's on the routes only the order service calls."""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Any

from flask import jsonify, request


def service_guard(token: str, prefixes: tuple[str, ...]) -> Callable[[], Any]:
    """A before-request check for a service's own routes (those under `prefixes`): answered
    401 without `Authorization: Bearer <token>`. A hook rather than HTTPTokenAuth because the
    same routes are open on a single machine (no token set), and the hook is then not
    installed at all."""
    expected = f"Bearer {token}".encode()

    def _check() -> Any:
        if not request.path.startswith(prefixes):
            return None
        sent = request.headers.get("Authorization", "").encode()
        if hmac.compare_digest(sent, expected):
            return None
        return (
            jsonify(error="service route: send Authorization: Bearer <STOCK_SERVICE_TOKEN>"),
            401,
            {"WWW-Authenticate": 'Bearer realm="inventory services"'},
        )

    return _check
