"""A JSON body nested deeper than the parser recurses, yet under the size cap (MAX_BODY_BYTES),
is bad input: a 400 JSON error that says so, on both services, and nothing written. It used to
be a 500 (the parser's RecursionError escaped as an unexpected error)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis as redis_lib

from tests.conftest import ADMIN, make_settings, unique
from tests.helpers import Services, running_services
from tests.integration.test_bad_input import row_counts


@pytest.fixture(scope="module")
def services(database_url: str, zk_server: Any, redis_server: Any) -> Iterator[Services]:
    with running_services(make_settings(database_url, zk_server, redis_server)) as s:
        yield s


def nested(depth: int, shape: str) -> str:
    """`depth` arrays (or objects) one inside the other."""
    if shape == "array":
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


def send(s: Services, route: str, body: str) -> Any:
    kwargs: dict[str, Any] = {"data": body, "content_type": "application/json"}
    if route == "genOrder":
        return s.order.post("/genOrder", **kwargs)
    if route == "reduceStock":
        flag = unique("flag")
        with redis_lib.Redis.from_url(s.settings.redis_url) as client:
            client.set(flag, "orderId", ex=60)
        return s.stock.put(f"/reduceStock/{flag}", **kwargs)
    return s.stock.put(f"/stock/{unique('g')}", headers=ADMIN, **kwargs)


# 900 levels parse, and are refused by the models; 10,000 and 30,000 exceed the parser's depth.
@pytest.mark.parametrize("depth", [900, 10_000, 30_000])
@pytest.mark.parametrize("shape", ["array", "object"])
@pytest.mark.parametrize("route", ["genOrder", "reduceStock", "stock"])
def test_a_deeply_nested_body_under_the_size_cap_is_a_400_json_error(
    services: Services, route: str, shape: str, depth: int
) -> None:
    body = nested(depth, shape)
    if len(body) > services.settings.max_body_bytes:
        depth = services.settings.max_body_bytes // 6
        body = nested(depth, shape)  # under the cap: the depth, not the size, is refused
    assert len(body) <= services.settings.max_body_bytes
    before = row_counts(services)
    response = send(services, route, body)
    assert response.status_code == 400, (response.status_code, response.get_data()[:300])
    assert isinstance(response.json["error"], str) and response.json["error"]
    if depth > 1000:  # past what the parser reads: said so, not a validation error
        assert "nested too deeply" in response.json["error"], response.json
    assert row_counts(services) == before
