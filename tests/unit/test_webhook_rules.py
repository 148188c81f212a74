"""The webhooks' pure parts: the signature (sign, verify), the addresses a subscription may
name (with a resolver given, so no name is looked up), a subscription's rules, the backoff
between attempts (full jitter under a doubling cap), and what each answer to a POST means
(httpx.MockTransport: nothing leaves the process)."""

from __future__ import annotations

import hashlib
import hmac
import json

import httpx
import pytest

from stock_service.webhooks import Refused, check, sign, verify
from stock_service.webhooks.addresses import private, url_problem
from stock_service.webhooks.deliverer import attempt
from stock_service.webhooks.deliveries import Due, Retries


def test_the_signature_is_the_hmac_sha256_of_the_raw_body_in_hex() -> None:
    body = b'{"id":"1","goodsId":"g"}'
    expected = hmac.new(b"0123456789abcdef", body, hashlib.sha256).hexdigest()
    assert sign("0123456789abcdef", body) == f"sha256={expected}"


@pytest.mark.parametrize(
    ("secret", "body", "header", "good"),
    [
        ("s" * 16, b"{}", None, True),  # the header sign() made
        ("s" * 16, b"{} ", None, False),  # a byte more in the body
        ("t" * 16, b"{}", None, False),  # another secret
        ("s" * 16, b"{}", "sha256=", False),
        ("s" * 16, b"{}", "", False),
        ("s" * 16, b"{}", "md5=abc", False),
    ],
)
def test_verify_accepts_only_the_signature_of_these_bytes_with_this_secret(
    secret: str, body: bytes, header: str | None, good: bool
) -> None:
    sent = sign("s" * 16, b"{}") if header is None else header
    assert verify(secret, body, sent) is good


def public(_host: str, _port: int) -> list[str]:
    return ["93.184.215.14"]


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.0.0.1",
        "172.16.5.4",
        "192.168.1.1",
        "169.254.169.254",
        "::1",
        "fe80::1%eth0",
        "224.0.0.1",
        "0.0.0.0",
        "240.0.0.1",
        "::ffff:10.0.0.1",
        "fc00::1",
        "::",
    ],
)
def test_private_and_special_addresses_are_private(address: str) -> None:
    assert private(address)


@pytest.mark.parametrize("address", ["93.184.215.14", "8.8.8.8", "2606:4700:4700::1111"])
def test_public_addresses_are_not(address: str) -> None:
    assert not private(address)


def test_a_name_resolving_to_one_private_address_among_public_ones_is_refused() -> None:
    def mixed(_host: str, _port: int) -> list[str]:
        return ["93.184.215.14", "10.0.0.7"]

    problem = url_problem("https://hooks.example.com/x", False, mixed)
    assert problem is not None and "10.0.0.7" in problem
    assert url_problem("https://hooks.example.com/x", True, mixed) is None


def test_a_name_that_does_not_resolve_is_refused_even_when_private_ones_are_allowed() -> None:
    def nowhere(_host: str, _port: int) -> list[str]:
        raise OSError("Name or service not known")

    problem = url_problem("https://nowhere.example/x", True, nowhere)
    assert problem is not None and "does not resolve" in problem


def test_the_port_resolved_is_the_url_s_or_its_scheme_s() -> None:
    asked: list[tuple[str, int]] = []

    def record(host: str, port: int) -> list[str]:
        asked.append((host, port))
        return ["93.184.215.14"]

    for url in ("http://h.example/", "https://h.example/", "https://h.example:8443/"):
        assert url_problem(url, False, record) is None
    assert asked == [("h.example", 80), ("h.example", 443), ("h.example", 8443)]


@pytest.mark.parametrize(
    ("kinds", "goods", "secret", "field"),
    [
        (["deducted", "DEDUCTED"], [], None, "kinds"),  # kinds are exact words
        ([], ["a b"], None, "goodsIds"),
        ([], ["é"], None, "goodsIds"),
        ([], ["g"] * 1001, None, "goodsIds"),
        ([], [], "x" * 15, "secret"),
        ([], [], "x" * 15 + "\x7f", "secret"),
        ([], [], "x" * 20 + "\u0085", "secret"),
    ],
)
def test_a_subscription_s_rules(
    kinds: list[str], goods: list[str], secret: str | None, field: str
) -> None:
    with pytest.raises(Refused) as refused:
        check("https://h.example/", kinds, goods, secret, False, public)
    assert refused.value.field == field


def test_a_subscription_keeping_every_rule_passes() -> None:
    check("https://h.example/", ["deducted"], ["g" * 64] * 1000, "x" * 256, False, public)


def test_the_backoff_is_full_jitter_under_a_doubling_cap() -> None:
    retries = Retries(max_attempts=8, max_age=60, base=1.0, cap=10.0)
    assert [retries.delay(n, lambda: 1.0) for n in range(1, 7)] == [1, 2, 4, 8, 10, 10]
    assert retries.delay(5, lambda: 0.0) == 0.0
    assert retries.delay(3, lambda: 0.5) == 2.0


def due() -> Due:
    event = {"id": "7", "goodsId": "g", "seq": "3", "kind": "deducted"}
    return Due("sub-1", 7, "g", 3, "http://127.0.0.1:9/hook", "s" * 16, event, 0)


@pytest.mark.parametrize(
    ("status", "error", "retry"),
    [
        (200, None, True),
        (204, None, True),
        (500, "HTTP 500", True),
        (503, "HTTP 503", True),
        (408, "HTTP 408", True),
        (429, "HTTP 429", True),
        (400, "HTTP 400", False),
        (404, "HTTP 404", False),
        (410, "HTTP 410", False),
        (301, "HTTP 301", False),  # a redirect is not followed
    ],
)
def test_what_an_answer_means(status: int, error: str | None, retry: bool) -> None:
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(status, headers={"Location": "http://10.0.0.1/"})

    with httpx.Client(transport=httpx.MockTransport(answer)) as client:
        outcome = attempt(client, due(), allow_private=True)
    assert (outcome.error, outcome.retry) == (error, retry)
    [request] = sent
    assert json.loads(request.content) == due().event
    assert verify("s" * 16, request.content, request.headers["X-Inventory-Signature"])
    assert request.headers["X-Inventory-Event-Id"] == "7"
    assert request.headers["X-Inventory-Seq"] == "3"
    assert request.headers["X-Inventory-Subscription"] == "sub-1"


@pytest.mark.parametrize(
    "failure",
    [httpx.ConnectError("refused"), httpx.ReadTimeout("slow"), httpx.RemoteProtocolError("x")],
)
def test_a_failure_to_get_an_answer_is_tried_again(failure: httpx.HTTPError) -> None:
    def fail(_request: httpx.Request) -> httpx.Response:
        raise failure

    with httpx.Client(transport=httpx.MockTransport(fail)) as client:
        outcome = attempt(client, due(), allow_private=True)
    assert outcome.retry and outcome.error


def test_a_private_address_is_refused_before_the_post_unless_allowed() -> None:
    def never(_request: httpx.Request) -> httpx.Response:
        raise AssertionError("posted")

    with httpx.Client(transport=httpx.MockTransport(never)) as client:
        outcome = attempt(client, due(), allow_private=False)
    assert outcome.retry and outcome.error and "WEBHOOK_ALLOW_PRIVATE" in outcome.error
