"""The admin routes' guard (PUT /stock/{goodsId}, PUT /faults/{point}): they change what the
service believes, so they need `Authorization: Bearer <ADMIN_TOKEN>` (apiflask's
HTTPTokenAuth, which also documents the scheme in /openapi.json). With no ADMIN_TOKEN
configured they are off: a 403 that says how to turn them on (and a start-up warning)."""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Any

from apiflask import HTTPTokenAuth
from apiflask.exceptions import HTTPError
from flask import jsonify, request

from shared.web.http_errors import ApiError

ADMIN = "admin"


def admin_auth(admin_token: str) -> HTTPTokenAuth:
    """Checked before anything else of the request (the auth decorator is outermost), so a
    caller without the token learns nothing of the body's rules."""
    auth = HTTPTokenAuth(
        scheme="Bearer",
        description="ADMIN_TOKEN of the stock service (`inventory up` generates one)",
        security_scheme_name="AdminToken",
        realm="inventory admin",
    )
    auth.error_processor(_refused)

    @auth.verify_token
    def _verify(token: str) -> str | None:
        if not admin_token:
            raise ApiError(403, "admin routes are off: set ADMIN_TOKEN on this service to use them")
        # compare_digest: the time taken does not depend on how much of the token was right.
        return ADMIN if hmac.compare_digest(token.encode(), admin_token.encode()) else None

    return auth


def _refused(error: HTTPError) -> tuple[dict[str, Any], int, Any]:
    # Flask-HTTPAuth adds WWW-Authenticate: Bearer realm="inventory admin" to this answer.
    return (
        {"error": "admin route: send Authorization: Bearer <ADMIN_TOKEN>"},
        error.status_code,
        error.headers,
    )


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
