"""One webhook delivery as a receiver saw it, the log of them, and the handler that takes them.

A delivery is a POST whose body is one stock event as GET /stock-events gives it (every value a
string) and whose X-Inventory-Signature is `sha256=<hex>`, the HMAC-SHA256 of the raw body with
the subscription's secret (docs/webhooks.md). The receiver verifies it with `verify` of
stock_service.webhooks, the same function a consumer is told to use, and reads the event's id,
goods id and seq from the body (what was signed), not from the headers beside it.

The log is one JSON line a delivery, appended, flushed and fsynced *before* the answer: a
delivery answered 2xx is on disk, whatever happens to the receiver afterwards. A receiver
killed mid-write leaves at most a torn last line, of a delivery never answered: read_receipts
drops it (the deliverer sends it again).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from stock_service.webhooks import verify

SIGNATURE = "X-Inventory-Signature"
EVENT_ID = "X-Inventory-Event-Id"
SUBSCRIPTION = "X-Inventory-Subscription"
MAX_BODY = 64 * 1024  # an event is a few hundred bytes


@dataclass(frozen=True)
class Receipt:
    """One delivery: the event it carried, whether its signature held, what was answered."""

    event_id: int
    goods_id: str
    seq: int
    kind: str
    valid: bool  # the signature verified with the subscription's secret
    status: int  # what the receiver answered
    subscription: str = ""
    at: float = 0.0  # the receiver's wall clock

    @property
    def accepted(self) -> bool:
        return 200 <= self.status < 300

    def line(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"), sort_keys=True)

    @classmethod
    def parse(cls, line: str) -> Receipt:
        fields = json.loads(line)
        return cls(
            event_id=int(fields["event_id"]),
            goods_id=str(fields["goods_id"]),
            seq=int(fields["seq"]),
            kind=str(fields["kind"]),
            valid=bool(fields["valid"]),
            status=int(fields["status"]),
            subscription=str(fields.get("subscription", "")),
            at=float(fields.get("at", 0.0)),
        )


def receipt_of(secret: str, body: bytes, headers: Mapping[str, str], status: int = 0) -> Receipt:
    """What a delivery carried, its signature checked. A body that is no event (not JSON, a
    field missing) keeps the header's event id, and -1 for what it lacks."""
    named = {k.lower(): v for k, v in headers.items()}  # HTTP's names know no case
    valid = verify(secret, body, named.get(SIGNATURE.lower(), ""))
    try:
        event: dict[str, Any] = json.loads(body)
        event_id, goods_id = int(event["id"]), str(event["goodsId"])
        seq, kind = int(event["seq"]), str(event["kind"])
    except (ValueError, KeyError, TypeError):
        header = named.get(EVENT_ID.lower(), "")
        event_id = int(header) if header.isdigit() else -1
        goods_id, seq, kind = "", -1, ""
    subscription = named.get(SUBSCRIPTION.lower(), "")
    return Receipt(event_id, goods_id, seq, kind, valid, status, subscription, time.time())


class ReceiptLog:
    """The receiver's log: a line a delivery, on disk before the answer."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - open for the run

    def append(self, receipt: Receipt) -> None:
        with self._lock:
            self._file.write(receipt.line() + "\n")
            self._file.flush()
            os.fsync(self._file.fileno())

    def close(self) -> None:
        with self._lock:
            self._file.close()


def read_receipts(path: Path) -> list[Receipt]:
    """The log, in the order written; a torn last line (a receiver killed mid-write, its
    delivery never answered) is left out. A torn line anywhere else is an error."""
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").split("\n")
    found: list[Receipt] = []
    for i, line in enumerate(lines):
        if not line:
            continue
        try:
            found.append(Receipt.parse(line))
        except (ValueError, KeyError):
            if i < len(lines) - 1 and any(lines[i + 1 :]):
                raise
    return found


# What to answer a delivery: its receipt (status 0) in, an HTTP status out.
Answer = Callable[[Receipt], int]


def answer_valid(receipt: Receipt) -> int:
    """The chaos receiver's answer: 200 for a signed event, 401 for a bad signature."""
    return 200 if receipt.valid else 401


def handler(secret: str, answer: Answer, keep: Callable[[Receipt], None]) -> type:
    """An http.server handler: each POST's receipt made, answered by `answer`, kept by `keep`
    (the log's append, or a list's) before the answer is sent."""

    class Deliveries(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # http.server's name
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                self._send(413)
                return
            body = self.rfile.read(length)
            seen = receipt_of(secret, body, dict(self.headers.items()))
            receipt = Receipt(**{**asdict(seen), "status": answer(seen)})
            keep(receipt)
            self._send(receipt.status)

        def _send(self, status: int) -> None:
            payload = json.dumps({"status": status}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the receipts are the log

    return Deliveries


@contextmanager
def serving(
    secret: str, answer: Answer, keep: Callable[[Receipt], None], host: str = "127.0.0.1"
) -> Iterator[ThreadingHTTPServer]:
    """A receiver in a thread of this process, on a free port of `host`, until the block ends."""
    server = ThreadingHTTPServer((host, 0), handler(secret, answer, keep))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.1,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
