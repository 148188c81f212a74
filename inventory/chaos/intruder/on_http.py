"""The intruder on the stock service's routes, through haproxy and straight to a replica: the
admin routes (set a level, arm a fault) and the service routes (deduct, void, return, read an
order's flows). Refused: 401 or 403; and 404 for PUT /faults, which does not exist while fault
injection is off. Any other answer (even a 404 for an unknown goods id) means the request got
past the guard."""

from __future__ import annotations

import http.client
import json
from functools import partial

from inventory.chaos.intruder.attempt import FLAG_LIKE, GUESS, Attempt, attempt
from inventory.cluster import topology

ADMIN_CALLS = [
    ("PUT", "/stock/intruder-goods", {"num": 1_000_000}, "set a stock level (admin route)"),
    ("PUT", "/faults/delay_after_commit", {"value": 30, "times": 100}, "arm a fault (admin)"),
]
SERVICE_CALLS = [
    ("PUT", f"/reduceStock/{FLAG_LIKE}", [{"goodsId": "g", "goodsNum": 1}], "deduct stock"),
    ("PUT", f"/returnStock/{FLAG_LIKE}", None, "return an order's stock"),
    ("PUT", f"/voidFlag/{FLAG_LIKE}", None, "void a flag"),
    ("GET", f"/stockFlow/{FLAG_LIKE}", None, "read an order's stock flow"),
]


class Refused(Exception):
    pass


def _request(host: str, port: int, method: str, path: str, body: object, token: str) -> str:
    conn = http.client.HTTPConnection(host, port, timeout=5)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        conn.request(method, path, json.dumps(body) if body is not None else None, headers)
        answer = conn.getresponse()
        text = f"{answer.status} {answer.read()[:100].decode(errors='replace')}"
    finally:
        conn.close()
    refusing = (401, 403, 404) if path.startswith("/faults/") else (401, 403)
    if answer.status in refusing:
        raise Refused(text)
    return text


def http_attempts(token: str = "") -> list[Attempt]:
    """No token: the stranger, without one and with a guessed one, on every route. With a
    token (the order service's STOCK_SERVICE_TOKEN): the admin routes, which it must not
    open."""
    stock = topology.by_role("stock")[0]
    calls = ADMIN_CALLS if token else ADMIN_CALLS + SERVICE_CALLS
    shown = {"": "without a token", GUESS: "with a guessed token", token: "with the order's token"}
    attempts = []
    for where, host, port in (
        ("haproxy", topology.VIP, topology.LB_STOCK_PORT),
        (stock.name, stock.address, topology.SERVICE_PORT),
    ):
        for sent in [token] if token else ["", GUESS]:
            for method, path, body, what in calls:
                attempts.append(
                    attempt(
                        "http",
                        f"{what} at {where} {shown[sent]}",
                        partial(_request, host, port, method, path, body, sent),
                        lambda exc: isinstance(exc, Refused),
                    )
                )
    return attempts
