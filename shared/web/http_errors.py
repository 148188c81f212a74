"""One error shape for every service: `{"error": "...", ...}` with a 4xx/5xx status.

Registered by both apps, so a malformed body, an oversized one, an unknown route or an
unexpected exception all answer JSON, and no stack trace reaches a client.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from flask import Flask, Response, jsonify
from werkzeug.exceptions import HTTPException

from shared.errors import DependencyUnavailable

log = logging.getLogger(__name__)


class ApiError(Exception):
    """An error that ends a request with HTTP status `code` and a JSON body; `extra` fields
    (which may include a `status` of an order) are added to the body."""

    def __init__(self, code: int, message: str, /, **extra: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.extra = extra
        self.headers: dict[str, str] = {}  # e.g. WWW-Authenticate on a 401


def error_response(code: int, message: str, /, **extra: Any) -> tuple[Response, int]:
    return jsonify({"error": message, **extra}), code


def register_error_handlers(
    app: Flask, on_unavailable: Callable[[DependencyUnavailable], None] = lambda _exc: None
) -> None:
    """`on_unavailable`: told of every 503 of a dependency (the stock service counts its lost
    locks there)."""

    @app.errorhandler(ApiError)
    def _api_error(exc: ApiError) -> tuple[Response, int]:
        response, code = error_response(exc.code, exc.message, **exc.extra)
        response.headers.update(exc.headers)
        return response, code

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException) -> tuple[Response, int]:
        status = exc.code or 500
        message = "request body too large" if status == 413 else exc.description or exc.name
        response, code = error_response(status, message)
        # werkzeug's own headers, such as the Allow of a 405 (RFC 9110 asks for it).
        response.headers.extend((k, v) for k, v in exc.get_headers() if k != "Content-Type")
        return response, code

    @app.errorhandler(DependencyUnavailable)
    def _unavailable(exc: DependencyUnavailable) -> tuple[Response, int]:
        """A dependency that is down, or a lock not had: 503, a JSON error naming it."""
        message = exc.answer()
        log.warning("503: %s", message)
        on_unavailable(exc)
        return error_response(503, message, dependency=exc.dependency)

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception) -> tuple[Response, int]:
        log.exception("unhandled error")
        return error_response(500, "internal error")
