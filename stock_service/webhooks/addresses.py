"""Where a subscription may send: an http or https URL whose host resolves only to public
addresses. A host that resolves to a loopback, private, link-local, multicast, unspecified or
reserved address (or to none) is refused, unless WEBHOOK_ALLOW_PRIVATE: a subscription must not
make the stock service a way to reach the network it sits in (its databases, the cloud's
metadata endpoint at 169.254.169.254). Checked when the subscription is made, and again before
each delivery (a name may resolve elsewhere later)."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from urllib.parse import SplitResult, urlsplit

MAX_URL = 2048
Resolve = Callable[[str, int], list[str]]


def resolve(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (socket.getaddrinfo); an OSError when none."""
    return [str(info[4][0]) for info in socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)]


def split(url: str) -> tuple[SplitResult, str, int] | str:
    """The URL's parts, its host and port; or why it is no URL this service sends to."""
    if len(url) > MAX_URL:
        return f"must be at most {MAX_URL} characters"
    if any(ord(c) < 0x21 or 0x7F <= ord(c) <= 0x9F for c in url):
        return "must have no spaces or control characters"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return f"is not a URL ({exc})"
    if parts.scheme not in ("http", "https"):
        return "must be an http or https URL"
    if not parts.hostname:
        return "must name a host"
    if parts.username is not None or parts.password is not None:
        return "must not carry a user or password (the signature authenticates the sender)"
    return parts, parts.hostname, port or (443 if parts.scheme == "https" else 80)


def private(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%")[0])  # an IPv6 scope (fe80::1%eth0) aside
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return bool(
        ip.is_loopback
        or ip.is_private
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_unspecified
        or ip.is_reserved
    )


def url_problem(url: str, allow_private: bool, resolve: Resolve = resolve) -> str | None:
    """Why `url` is refused, or None. Resolves the host (every address must be public)."""
    found = split(url)
    if isinstance(found, str):
        return found
    _, host, port = found
    try:
        addresses = resolve(host, port)
    except (OSError, UnicodeError) as exc:
        return f"host {host!r} does not resolve ({exc})"
    if not addresses:
        return f"host {host!r} does not resolve"
    if allow_private:
        return None
    refused = sorted({a for a in addresses if private(a)})
    if refused:
        return (
            f"host {host!r} resolves to a private, loopback, link-local, multicast or reserved "
            f"address ({', '.join(refused[:3])}); set WEBHOOK_ALLOW_PRIVATE=true to allow it"
        )
    return None
