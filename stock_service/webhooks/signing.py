"""The signature of a delivery: `X-Inventory-Signature: sha256=<hex>`, the HMAC-SHA256 of the
raw body bytes with the subscription's secret. A receiver checks it on the bytes it received,
before parsing them (a parse and re-dump need not give the same bytes back)."""

from __future__ import annotations

import hashlib
import hmac

SCHEME = "sha256="


def sign(secret: str, body: bytes) -> str:
    """The header's value for `body` signed with `secret`: `sha256=<64 hex digits>`."""
    return SCHEME + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify(secret: str, body: bytes, header: str) -> bool:
    """Whether `header` (X-Inventory-Signature as received) signs `body` with `secret`.
    compare_digest: the time taken does not tell how much of a forged signature was right."""
    return hmac.compare_digest(sign(secret, body).encode(), (header or "").strip().encode())
