"""One TLS context per process for every Redis connection of the same settings.

redis-py (8.1) builds a new SSLContext for each connection it opens: `ssl.create_default_context()`
loads the system's CA store, then the CA file is loaded again. That is tens of milliseconds of
CPU per connection (about 25 ms measured in the cluster), paid again by every pool after every
Sentinel failover or dropped connection. Here the context is built once per set of TLS settings
and shared by every connection and pool of the process (an SSLContext may be shared by threads).
OCSP validation, which this project does not use, keeps redis-py's own path."""

from __future__ import annotations

import ssl
import threading
from typing import Any

from redis.connection import SSLConnection
from redis.sentinel import SentinelManagedSSLConnection

_CONTEXTS: dict[tuple[Any, ...], ssl.SSLContext] = {}
_GUARD = threading.Lock()


def shared_context(conn: Any) -> ssl.SSLContext:
    """The context redis-py would build for `conn` (its settings, as _wrap_socket_with_ssl
    reads them), built once per process."""
    key = (
        conn.ca_certs,
        conn.ca_path,
        conn.ca_data,
        conn.certfile,
        conn.keyfile,
        conn.check_hostname,
        conn.cert_reqs,
        conn.ssl_min_version,
        conn.ssl_ciphers,
    )
    with _GUARD:
        context = _CONTEXTS.get(key)
        if context is None:
            context = _CONTEXTS[key] = _build(conn)
        return context


def _build(conn: Any) -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = conn.check_hostname
    context.verify_mode = conn.cert_reqs
    if conn.certfile or conn.keyfile:
        context.load_cert_chain(
            certfile=conn.certfile, keyfile=conn.keyfile, password=conn.certificate_password
        )
    if conn.ca_certs is not None or conn.ca_path is not None or conn.ca_data is not None:
        context.load_verify_locations(
            cafile=conn.ca_certs, capath=conn.ca_path, cadata=conn.ca_data
        )
    if conn.ssl_min_version is not None:
        context.minimum_version = conn.ssl_min_version
    if conn.ssl_ciphers:
        context.set_ciphers(conn.ssl_ciphers)
    return context


class _Shared:
    def _wrap_socket_with_ssl(self, sock: Any) -> Any:
        me: Any = self
        if me.ssl_validate_ocsp or me.ssl_validate_ocsp_stapled:
            return super()._wrap_socket_with_ssl(sock)  # type: ignore[misc]
        return shared_context(me).wrap_socket(sock, server_hostname=me.host)


class SharedSSLConnection(_Shared, SSLConnection):
    """rediss:// with the process's shared context."""


class SharedSentinelSSLConnection(_Shared, SentinelManagedSSLConnection):
    """rediss+sentinel:// (to the primary Sentinel names) with the process's shared context."""
