"""The admin routes' guard, one for both services (the stock service's PUT /stock/{goodsId},
PUT /faults/{point}, the subscriptions; the order service's buyer limits): they change what a
service believes, so they need `Authorization: Bearer <ADMIN_TOKEN>` (apiflask's
HTTPTokenAuth, which also documents the scheme in /openapi.json). With no ADMIN_TOKEN
configured they are off: a 403 that says how to turn them on (and a start-up warning)."""

from __future__ import annotations

import hmac
from typing import Any

from apiflask import HTTPTokenAuth
from apiflask.exceptions import HTTPError

from shared.web.http_errors import ApiError

ADMIN = "admin"


def admin_auth(admin_token: str, service: str) -> HTTPTokenAuth:
    """Checked before anything else of the request (the auth decorator is outermost), so a
    caller without the token learns nothing of the body's rules. `service` names whose token
    it is, in the OpenAPI document."""
    auth = HTTPTokenAuth(
        scheme="Bearer",
        description=f"ADMIN_TOKEN of the {service} (`inventory up` generates one)",
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
