"""Webhooks: the stock events POSTed, signed, to the URLs the admin subscribed
(docs/webhooks.md). The subscriptions are rows of the stock database, kept by the admin routes
(stock_service/api/subscriptions/); the deliveries are made by a program apart, one elected
among standbys.

    signing.py        sign and verify X-Inventory-Signature (HMAC-SHA256 of the raw body)
    addresses.py      the URLs a subscription may name: http(s), a public address
    subscriptions.py  the subscriptions' rules and rows, their dead letters and replays
    deliveries.py     the deliverer's rows: fan-out, claims of what is due, outcomes, backoff
    deliverer.py      `python -m stock_service.webhooks.deliverer`: the elected deliverer
"""

from __future__ import annotations

import threading

from shared.config.settings import Settings
from stock_service.webhooks.addresses import MAX_URL
from stock_service.webhooks.deliveries import ELECTION_PATH, counts
from stock_service.webhooks.signing import sign, verify
from stock_service.webhooks.subscriptions import (
    MAX_GOODS_IDS,
    SECRET_MAX,
    SECRET_MIN,
    Refused,
    Subscriptions,
    check,
)


def main(argv: list[str] | None = None) -> int:
    """What `python -m stock_service.webhooks.deliverer [--name NAME]` runs. Imported when
    called: run with -m, the module is executed as __main__, and its import here first would
    make it twice."""
    from stock_service.webhooks.deliverer import main as run

    return run(argv)


def serve(settings: Settings, identifier: str, stop: threading.Event) -> None:
    """One deliverer in this process until `stop` is set (campaigns, delivers while leading)."""
    from stock_service.webhooks.deliverer import serve as run

    run(settings, identifier, stop)


__all__ = [
    "ELECTION_PATH",
    "MAX_GOODS_IDS",
    "MAX_URL",
    "SECRET_MAX",
    "SECRET_MIN",
    "Refused",
    "Subscriptions",
    "check",
    "counts",
    "main",
    "serve",
    "sign",
    "verify",
]
