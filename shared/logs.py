"""Logging set-up: one line per event, with the logger name so a 503 names its dependency."""

from __future__ import annotations

import logging


def configure_logging(level: str) -> None:
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(
            level=level.upper(),
            format="%(asctime)s %(levelname)s %(process)d %(name)s: %(message)s",
        )
    else:
        root.setLevel(level.upper())
    # kazoo logs every reconnect attempt at INFO; keep the service's own lines readable.
    logging.getLogger("kazoo.client").setLevel(logging.WARNING)
    # httpx logs every request at INFO: one line per call is noise at hundreds per second.
    logging.getLogger("httpx").setLevel(logging.WARNING)
