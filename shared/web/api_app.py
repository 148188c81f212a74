"""The APIFlask app both services start from: the contract at /openapi.json (OpenAPI 3.1, made
from the pydantic models the views validate with), Swagger UI at /docs with its assets served
from this package (vendored from npm's swagger-ui-dist, no CDN), and one error shape,
`{"error": ..., "field"?: ...}`, for validation and auth errors too. A body is read only when
sent as application/json (json_only.py: else 415, so a cross-site form cannot place an order).

`answers()` documents a route's statuses with their bodies; a route lists every status it can
answer, so a client (and schemathesis) knows them all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apiflask import APIFlask
from apiflask.exceptions import HTTPError
from flask import Blueprint
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from shared.config.settings import Settings
from shared.web.json_only import JsonRequest
from shared.web.schemas import ErrorBody, validation_message

REF = "#/components/schemas/{model}"
# Every model an answers() call named, by name: the spec processor adds those a document uses.
_ANSWER_MODELS: dict[str, type[BaseModel]] = {}

NOT_JSON = {415: (ErrorBody, "The body was not sent with Content-Type: application/json")}
TYPED_NO_BODY = {
    415: (
        ErrorBody,
        "A Content-Type other than application/json was sent: this route takes no body",
    )
}

docs_assets = Blueprint(
    "docs_assets", __name__, static_folder="static/swagger-ui", static_url_path="/docs/assets"
)


def make_api_app(name: str, settings: Settings, title: str, description: str) -> APIFlask:
    app = APIFlask(name, title=title, version="1.0", spec_path="/openapi.json", docs_path="/docs")
    app.request_class = JsonRequest
    app.config.update(
        MAX_CONTENT_LENGTH=settings.max_body_bytes,
        DESCRIPTION=description,
        VALIDATION_ERROR_STATUS_CODE=400,  # this API's clients have always had 400 for bad input
        VALIDATION_ERROR_DESCRIPTION="The input broke a rule: the error names the field",
        VALIDATION_ERROR_SCHEMA=_schema_of(ErrorBody),
        HTTP_ERROR_SCHEMA=_schema_of(ErrorBody),
        AUTO_404_RESPONSE=False,  # each route lists its own 404, where it has one
        # No `servers`: the document is cached after its first request, so a server URL taken
        # from that request would send every later reader (through another host or the load
        # balancer) to the first one's address. Without it, paths are relative to the document.
        AUTO_SERVERS=False,
        SWAGGER_UI_CSS="/docs/assets/swagger-ui.css",
        SWAGGER_UI_BUNDLE_JS="/docs/assets/swagger-ui-bundle.js",
        SWAGGER_UI_STANDALONE_PRESET_JS="/docs/assets/swagger-ui-standalone-preset.js",
        DOCS_FAVICON="/docs/assets/favicon-32x32.png",
    )
    app.register_blueprint(docs_assets)
    app.error_processor(error_body)
    app.spec_processor(_complete_spec)
    return app


def error_body(error: HTTPError) -> tuple[dict[str, Any], int, Any]:
    """apiflask's errors (validation, auth) in this API's shape."""
    body: dict[str, Any] = {"error": error.message}
    if isinstance(error.detail, dict) and error.detail:
        body["error"], field = validation_message(error.detail)
        if field is not None:
            body["field"] = field
    body.update(error.extra_data)
    return body, error.status_code, error.headers


def answers(
    table: Mapping[int, tuple[type[BaseModel] | None, str] | tuple[None, str, str]],
) -> dict[int, Any]:
    """`@bp.doc(responses=answers({200: (Model, "what it means"), 503: (Unavailable, "...")}))`:
    a JSON body of Model, or (None, description, media type) for a body that is not JSON."""
    documented: dict[int, Any] = {}
    for status, entry in table.items():
        model, description = entry[0], entry[1]
        if model is None:
            media = entry[2] if len(entry) == 3 else "text/plain"
            documented[status] = {
                "description": description,
                "content": {media: {"schema": {"type": "string"}}},
            }
            continue
        _ANSWER_MODELS[model.__name__] = model
        documented[status] = {
            "description": description,
            "content": {"application/json": {"schema": {"$ref": REF.format(model=model.__name__)}}},
        }
    return documented


def _schema_of(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema(ref_template=REF, mode="serialization")


def _complete_spec(spec: Any) -> Any:
    """What apiflask leaves out: the answer models' schemas, that a body is required, and the
    415 every route with a body answers to a body not sent as application/json, and every POST
    without one to a Content-Type other than JSON (said here, in one place, as each check is
    made in one place: json_only.py)."""
    for path in spec.get("paths", {}).values():
        for operation in path.values():
            if isinstance(operation, dict) and "requestBody" in operation:
                operation["requestBody"]["required"] = True
                operation.setdefault("responses", {}).setdefault("415", answers(NOT_JSON)[415])
            elif operation is path.get("post"):  # json_only.install_bodyless_post_rule
                operation.setdefault("responses", {}).setdefault("415", answers(TYPED_NO_BODY)[415])
    schemas = spec.setdefault("components", {}).setdefault("schemas", {})
    text = repr(spec)
    used = [m for name, m in _ANSWER_MODELS.items() if REF.format(model=name) in text]
    if used:
        _, defs = models_json_schema([(m, "serialization") for m in used], ref_template=REF)
        schemas.update(defs.get("$defs", {}))
    return spec
