"""Logging set-up: one line per event, with the logger name so a 503 names its dependency.

LOG_FORMAT=json writes each line as a JSON object (python-json-logger), gunicorn's own lines
included. Inside a request, every line also carries the request id (X-Request-Id, passed from
the order service to the stock service) and, once known, the order id and the flag, so one
order's journey can be followed through both services' logs.
"""

from __future__ import annotations

import logging

from flask import g, has_request_context

TEXT_FORMAT = "%(asctime)s %(levelname)s %(process)d %(name)s: %(message)s"
JSON_FIELDS = ["asctime", "levelname", "process", "name", "message"]
CONTEXT = ("request_id", "order_id", "flag")  # attributes of flask.g copied onto each line


class RequestContext(logging.Filter):
    """Copies the request's id, order id and flag (where set) onto each record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if has_request_context():
            for name in CONTEXT:
                value = g.get(name)
                if value:
                    setattr(record, name, value)
        return True


def log_context(**values: str) -> None:
    """Name what this request is about (order_id=..., flag=...), for every later line of it."""
    if has_request_context():
        for name, value in values.items():
            setattr(g, name, value)


def _json_formatter() -> logging.Formatter:
    from pythonjsonlogger.json import JsonFormatter

    return JsonFormatter(JSON_FIELDS, rename_fields={"levelname": "level", "name": "logger"})


def gunicorn_json_log_config(level: str = "INFO") -> dict[str, object]:
    """For `gunicorn --log-config-json`: gunicorn's own lines (the master's too, which never
    runs create_app) as JSON, in the same shape as the services' lines."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "json": {
                "()": "pythonjsonlogger.json.JsonFormatter",
                "fmt": JSON_FIELDS,
                "rename_fields": {"levelname": "level", "name": "logger"},
            }
        },
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "json",
                "stream": "ext://sys.stderr",
            }
        },
        "root": {"level": level.upper(), "handlers": ["stderr"]},
        "loggers": {
            "gunicorn.error": {"level": "INFO", "handlers": ["stderr"], "propagate": False}
        },
    }


def configure_logging(level: str, fmt: str = "text") -> None:
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(level=level.upper(), format=TEXT_FORMAT)
    else:
        root.setLevel(level.upper())
    # gunicorn's error log has handlers of its own: the same filter and format there.
    for handler in [*root.handlers, *logging.getLogger("gunicorn.error").handlers]:
        if not any(isinstance(f, RequestContext) for f in handler.filters):
            handler.addFilter(RequestContext())
        if fmt == "json":
            handler.setFormatter(_json_formatter())
    # kazoo logs every reconnect attempt at INFO; keep the service's own lines readable.
    logging.getLogger("kazoo.client").setLevel(logging.WARNING)
    # httpx logs every request at INFO: one line per call is noise at hundreds per second.
    logging.getLogger("httpx").setLevel(logging.WARNING)
