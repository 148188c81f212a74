"""The order service rides out a Redis restart when it writes a batch's flags: a SET is
idempotent, so the pipeline is tried again for a few seconds before the orders fail, and the
batch lets the next one start meanwhile. Fakes only: this is the retry policy, nothing else
(tests/integration/test_dependency_down.py has Redis down)."""

from __future__ import annotations

from typing import Any

import redis

from order_service.placing.flags import FlagWriter
from shared.config.settings import Settings

FLAG_WRITE_SECONDS = Settings().flag_write_seconds


class FlakyRedis:
    """Refuses the first `failures` pipelines, as a restarting Redis does."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.sets: list[str] = []

    def pipeline(self, transaction: bool) -> FlakyPipeline:
        return FlakyPipeline(self)


class FlakyPipeline:
    def __init__(self, server: FlakyRedis) -> None:
        self.server = server
        self.queued: list[str] = []

    def set(self, key: str, value: str, ex: int) -> None:
        self.queued.append(key)

    def execute(self) -> list[bool]:
        if self.server.failures:
            self.server.failures -= 1
            raise redis.ConnectionError("Connection refused")
        self.server.sets += self.queued
        return [True] * len(self.queued)


def writer(client: Any, slept: list[float]) -> FlagWriter:
    return FlagWriter(client, 60, FLAG_WRITE_SECONDS, sleep=slept.append)


def test_flags_are_written_once_redis_is_back_and_the_next_batch_is_let_go() -> None:
    slept: list[float] = []
    troubles: list[int] = []
    client = FlakyRedis(failures=3)
    assert writer(client, slept).write(["o1", "o2"], lambda: troubles.append(1))
    assert client.sets == ["o1", "o2"]
    assert len(slept) == 3 and sum(slept) <= FLAG_WRITE_SECONDS
    assert len(troubles) == 3  # before each retry


def test_a_redis_that_stays_down_fails_the_flags_within_their_budget() -> None:
    slept: list[float] = []
    client = FlakyRedis(failures=1000)
    assert not writer(client, slept).write(["o1"])
    assert client.sets == [] and sum(slept) <= FLAG_WRITE_SECONDS
