"""A light HTTP load generator for the bench: one stdlib `http.client` keep-alive connection per
thread, nothing parsed while the clock runs.

Why not httpx: on this 2-core machine the load generator shares the cores with the services,
ZooKeeper and Redis, so every millisecond it burns is taken from what it measures. httpx's
AsyncClient cost 2.0-2.8 ms of CPU per request here (the bench reports it as `load`); this
client costs a fraction of that (also reported, per run). Bodies are encoded before the clock
starts and answers are decoded after it stops.
"""

from __future__ import annotations

import http.client
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    body: bytes | None = None


@dataclass
class Answer:
    status: int  # 0: no answer (the connection failed)
    body: bytes
    server_timing: str
    seconds: float


@dataclass
class LoadRun:
    answers: list[Answer]
    elapsed: float

    @property
    def per_second(self) -> float:
        return len(self.answers) / self.elapsed if self.elapsed else 0.0


HEADERS = {"Content-Type": "application/json", "Connection": "keep-alive"}


def run_calls(
    base_url: str, calls: Sequence[Call], concurrency: int, timeout: float = 120.0
) -> LoadRun:
    """Every call once, `concurrency` at a time, each thread on its own kept-alive connection;
    answers in the order of `calls`."""
    url = urlsplit(base_url)
    host, port = url.hostname or "127.0.0.1", url.port or 80
    answers: list[Answer | None] = [None] * len(calls)
    next_index = iter(range(len(calls)))
    take = threading.Lock()

    def worker() -> None:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
        try:
            while True:
                with take:
                    i = next(next_index, None)
                if i is None:
                    return
                answers[i] = _one(conn, calls[i])
        finally:
            conn.close()

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(concurrency)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    return LoadRun([a for a in answers if a is not None], elapsed)


def _one(conn: http.client.HTTPConnection, call: Call) -> Answer:
    t0 = time.perf_counter()
    for attempt in (1, 2):
        try:
            conn.request(call.method, call.path, body=call.body, headers=HEADERS)
            response = conn.getresponse()
            body = response.read()
            timing = response.getheader("Server-Timing", "")
            return Answer(response.status, body, timing, time.perf_counter() - t0)
        except (http.client.HTTPException, OSError):
            # A kept-alive connection the server closed: reconnect once. A second failure
            # is an answer of its own (status 0), counted as an error by the caller.
            conn.close()
            if attempt == 2:
                break
    return Answer(0, b"", "", time.perf_counter() - t0)
