"""REDIS_URL through Sentinel: the URL names the sentinels, the master, this service's ACL user
and the sentinels' password; nothing connects until the first command."""

from __future__ import annotations

import pytest

from shared.redis_client import make_redis


def test_a_sentinel_url_names_the_sentinels_master_user_and_their_password() -> None:
    client = make_redis(
        "redis+sentinel://stock:s3cret@10.0.0.1:26379,10.0.0.2:26380/inventory/2"
        "?sentinel_password=watch"
    )
    pool = client.connection_pool
    assert pool.service_name == "inventory"  # type: ignore[attr-defined]
    kwargs = pool.connection_kwargs
    assert (kwargs["username"], kwargs["password"], kwargs["db"]) == ("stock", "s3cret", 2)
    sentinels = pool.sentinel_manager.sentinels  # type: ignore[attr-defined]
    assert [s.connection_pool.connection_kwargs["port"] for s in sentinels] == [26379, 26380]
    assert sentinels[0].connection_pool.connection_kwargs["password"] == "watch"


def test_a_sentinel_url_without_a_master_is_refused() -> None:
    with pytest.raises(ValueError, match="master's name"):
        make_redis("redis+sentinel://10.0.0.1:26379")


def test_a_plain_url_is_a_plain_client() -> None:
    kwargs = make_redis("redis://order:pw@127.0.0.1:6390/1").connection_pool.connection_kwargs
    assert (kwargs["username"], kwargs["port"], kwargs["db"]) == ("order", 6390, 1)


def test_a_tls_sentinel_url_checks_the_sentinels_and_redis_against_its_ca() -> None:
    from redis.sentinel import SentinelManagedSSLConnection

    from shared.redis_tls import SharedSentinelSSLConnection

    client = make_redis(
        "rediss+sentinel://stock:pw@10.0.0.1:26379/inventory/0"
        "?sentinel_password=watch&ssl_ca_certs=/etc/ca.crt"
    )
    pool = client.connection_pool
    # redis-py's Sentinel TLS connection, with one TLS context shared by the process's pools
    assert pool.connection_class is SharedSentinelSSLConnection
    assert issubclass(pool.connection_class, SentinelManagedSSLConnection)
    assert pool.connection_kwargs["ssl_ca_certs"] == "/etc/ca.crt"
    assert pool.connection_kwargs["ssl_cert_reqs"] == "required"
    sentinel_pool = pool.sentinel_manager.sentinels[0].connection_pool  # type: ignore[attr-defined]
    assert sentinel_pool.connection_kwargs["ssl_ca_certs"] == "/etc/ca.crt"
    assert "SSL" in sentinel_pool.connection_class.__name__


def test_a_tls_sentinel_url_without_its_ca_is_refused() -> None:
    with pytest.raises(ValueError, match="ssl_ca_certs"):
        make_redis("rediss+sentinel://10.0.0.1:26379/inventory")


def test_tls_connections_of_the_same_settings_share_one_context() -> None:
    """redis-py built a TLS context (loading the system's CA store) for every connection it
    opened; here the process builds one per set of TLS settings (shared/redis_tls.py)."""
    import ssl

    from shared.redis_tls import SharedSSLConnection, shared_context

    ca = ssl.get_default_verify_paths().cafile or ssl.get_default_verify_paths().capath
    options = {"ssl_ca_certs": ca if ca and ca.endswith((".pem", ".crt")) else None}
    one = SharedSSLConnection(host="10.0.0.1", port=6380, ssl_cert_reqs="required", **options)
    two = SharedSSLConnection(host="10.0.0.2", port=6380, ssl_cert_reqs="required", **options)
    other = SharedSSLConnection(host="10.0.0.1", port=6380, ssl_cert_reqs="none")
    assert shared_context(one) is shared_context(two)
    assert shared_context(one) is not shared_context(other)
    assert shared_context(one).verify_mode == ssl.CERT_REQUIRED
