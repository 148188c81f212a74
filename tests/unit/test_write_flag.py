"""The order service rides out a Redis restart when it writes an order's flag: a SET is
idempotent, so it is tried again for a few seconds before the order fails. Fakes only: this is
the retry policy, nothing else (tests/integration/test_dependency_down.py has Redis down)."""

from __future__ import annotations

from typing import Any

import redis

from order_service.flow import OrderFlow
from shared.settings import Settings

FLAG_WRITE_SECONDS = Settings().flag_write_seconds


class FlakyRedis:
    """Refuses the first `failures` SETs, as a restarting Redis does."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.sets: list[str] = []

    def set(self, key: str, value: str, ex: int) -> bool:
        if self.failures:
            self.failures -= 1
            raise redis.ConnectionError("Connection refused")
        self.sets.append(key)
        return True


def flow_with(client: Any, slept: list[float]) -> OrderFlow:
    return OrderFlow(None, client, None, 60, (), 1.0, sleep=slept.append)  # type: ignore[arg-type]


def test_a_flag_is_written_once_redis_is_back() -> None:
    slept: list[float] = []
    client = FlakyRedis(failures=3)
    assert flow_with(client, slept).write_flag("o1")
    assert client.sets == ["o1"]
    assert len(slept) == 3 and sum(slept) <= FLAG_WRITE_SECONDS


def test_a_redis_that_stays_down_fails_the_flag_within_its_budget() -> None:
    slept: list[float] = []
    client = FlakyRedis(failures=1000)
    assert not flow_with(client, slept).write_flag("o1")
    assert client.sets == [] and sum(slept) <= FLAG_WRITE_SECONDS
