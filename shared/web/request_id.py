"""X-Request-Id: taken from the caller when it is a sane token, else made here; echoed on the
answer; sent on by the order service's calls to the stock service (stock_client.py)."""

from __future__ import annotations

import re

from flask import Flask, Response, g, has_request_context, request

from shared.ids import new_id

HEADER = "X-Request-Id"
# Ids end up in logs and headers: anything else (too long, spaces, control characters) is
# replaced rather than trusted.
_SANE = re.compile(r"[A-Za-z0-9._:-]{1,64}")


def install_request_ids(app: Flask) -> None:
    @app.before_request
    def _take_request_id() -> None:
        given = request.headers.get(HEADER, "")
        g.request_id = given if _SANE.fullmatch(given) else new_id()

    @app.after_request
    def _echo_request_id(response: Response) -> Response:
        if "request_id" in g:
            response.headers[HEADER] = g.request_id
        return response


def current_request_id() -> str | None:
    return g.get("request_id") if has_request_context() else None


def request_id_headers() -> dict[str, str]:
    """The header to send on a call made while serving a request."""
    request_id = current_request_id()
    return {HEADER: request_id} if request_id else {}
