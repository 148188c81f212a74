"""Bodies are JSON, and say so: a request whose body a route reads as JSON gets 415 unless it
is sent with `Content-Type: application/json`.

Why it matters: a page on any other site can make a browser send a "simple" cross-site
request (a form post, or fetch() without CORS) with Content-Type text/plain,
application/x-www-form-urlencoded or multipart/form-data, or with none at all, and no CORS
preflight asks this service first. apiflask reads bodies with `get_json(force=True)`, which
ignores the Content-Type, so such a request used to place a real order. Requiring
application/json makes every such request a non-simple one the browser must preflight (and
this service answers no preflight), so it never arrives.

The check lives in the request class rather than in a before-request hook: it then runs
exactly where a route reads a JSON body (no list of routes to keep in step), after the
routes' token checks (a caller without the token still learns nothing but 401) and after the
request-id and metrics hooks (a 415 is logged and counted like any answer), and before the
view does anything, so a refused request writes nothing.
"""

from __future__ import annotations

from typing import Any

from flask import Flask, Request, request
from werkzeug.exceptions import BadRequest, UnsupportedMediaType

JSON = "application/json"
TOO_DEEP = "request body is nested too deeply to be read as JSON"


def refusal(sent: str) -> str:
    got = f"got {sent!r}" if sent else "got none"
    return f"send the body as JSON with Content-Type: {JSON} ({got})"


class JsonRequest(Request):
    """A body is read as JSON only when its Content-Type says application/json (with any
    parameters, such as charset); anything else is a 415 whose error says what to send. A
    body that claims to be JSON and is not gets a 400 that says so, not werkzeug's generic
    sentence; so does one nested deeper than the parser recurses (a few kilobytes of `[`
    under MAX_BODY_BYTES: the parser's RecursionError was a 500)."""

    def get_json(self, force: bool = False, silent: bool = False, cache: bool = True) -> Any:
        # `force` is apiflask's, and is overruled on purpose: see the module's docstring.
        if self.mimetype != JSON:
            raise UnsupportedMediaType(refusal(self.headers.get("Content-Type", "")))
        try:
            return super().get_json(force=force, silent=silent, cache=cache)
        except RecursionError:
            if silent:
                return None
            raise BadRequest(TOO_DEEP) from None

    def on_json_loading_failed(self, e: ValueError | None) -> Any:
        if not self.get_data(cache=True):
            raise BadRequest("request body is empty; JSON expected")
        raise BadRequest("request body is not valid JSON")


def no_body_refusal(sent: str) -> str:
    return f"this route takes no body: send none, or Content-Type: {JSON} (got {sent!r})"


def install_bodyless_post_rule(app: Flask) -> None:
    """A POST route that reads no body (cancel, pay) refuses a request labelled with any other
    Content-Type than application/json: 415, before the view runs. What a form on another site
    posts (urlencoded, multipart, text/plain) is so refused, as genOrder refuses it.

    A POST with no Content-Type at all is accepted (`curl -X POST .../cancel`). A page can
    still make a browser send one (fetch without CORS, sendBeacon with no data), but it must
    know the order's id, which it cannot read from another origin: 64 random bits per order
    (shared/ids.py). /cancelOrder needs an Idempotency-Key header, which no simple request
    carries. Installed after the request-id and metrics hooks, so a 415 is logged and counted
    like any answer."""

    @app.before_request
    def refuse_typed_bodyless_post() -> None:
        # JSON or no type at all passes at once: genOrder, the hot path, pays two lookups.
        sent = request.headers.get("Content-Type")
        if request.method != "POST" or not sent or request.mimetype == JSON:
            return
        view = app.view_functions.get(request.endpoint or "")
        if view is not None and "body" not in getattr(view, "_spec", {}):
            raise UnsupportedMediaType(no_body_refusal(sent))
        # a route with a body: JsonRequest.get_json refuses it where it reads it
