"""The admin routes' guard (PUT /stock/{goodsId}, PUT /faults/{point}): they change what the
service believes, so they need `Authorization: Bearer <ADMIN_TOKEN>`. With no ADMIN_TOKEN
configured they are off: a 403 that says how to turn them on (and a start-up warning)."""

from __future__ import annotations

import hmac

from flask import Request

from shared.http_errors import ApiError


def require_admin(admin_token: str, request: Request) -> None:
    """Raise the 401/403 ApiError unless the request carries the admin token. Checked before
    anything else of the request, so a caller without the token learns nothing of the body."""
    if not admin_token:
        raise ApiError(403, "admin routes are off: set ADMIN_TOKEN on this service to use them")
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    # compare_digest: the time taken does not depend on how much of the token was right.
    if scheme.lower() != "bearer" or not hmac.compare_digest(
        given.strip().encode(), admin_token.encode()
    ):
        error = ApiError(401, "admin route: send Authorization: Bearer <ADMIN_TOKEN>")
        error.headers = {"WWW-Authenticate": 'Bearer realm="inventory admin"'}
        raise error
