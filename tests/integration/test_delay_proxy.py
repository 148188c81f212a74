"""The delaying TCP proxy (inventory/cluster/delay_proxy.py) on real loopback sockets: it keeps
every byte and its order both ways, adds its delay once each way (not less, and not wildly
more), and a close on either side reaches the other."""

from __future__ import annotations

import os
import socket
import statistics
import threading
import time
from collections.abc import Iterator

import pytest

from inventory.cluster import delay_proxy

DELAY = 0.005  # 5 ms: large against a loaded machine's scheduling noise, small for a test


class Upstream:
    """A server on a free port that echoes each byte back or, told to, closes its end."""

    def __init__(self) -> None:
        self.listener = delay_proxy.listen("127.0.0.1", 0)
        self.port = self.listener.getsockname()[1]
        self.conns: list[socket.socket] = []
        self.closed_by_peer = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    def _echo(self, conn: socket.socket) -> None:
        try:
            while data := conn.recv(65536):
                conn.sendall(data)
        except OSError:
            return
        self.closed_by_peer.set()


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    server = Upstream()
    yield server
    server.listener.close()
    for conn in server.conns:
        conn.close()


def _through(upstream: Upstream, delay: float) -> tuple[socket.socket, socket.socket]:
    listener = delay_proxy.start("127.0.0.1", 0, ("127.0.0.1", upstream.port), delay)
    client = socket.create_connection(listener.getsockname(), timeout=10)
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return client, listener


def _read_exactly(conn: socket.socket, size: int) -> bytes:
    got = bytearray()
    while len(got) < size:
        data = conn.recv(size - len(got))
        assert data, f"closed after {len(got)} of {size} bytes"
        got += data
    return bytes(got)


def test_every_byte_in_order_both_ways(upstream: Upstream) -> None:
    client, listener = _through(upstream, 0.0005)
    # 4 MB in chunks of uneven sizes, sent while the echo comes back: both directions busy
    sent = os.urandom(4 * 1024 * 1024)
    received = bytearray()

    def read_back() -> None:
        received.extend(_read_exactly(client, len(sent)))

    reader = threading.Thread(target=read_back)
    reader.start()
    at = 0
    for size in [1, 7, 1500, 65536, 100_000, 3] * 1000:
        if at >= len(sent):
            break
        client.sendall(sent[at : at + size])
        at += size
    reader.join(60)
    assert bytes(received) == sent
    client.close()
    listener.close()


def _round_trips(conn: socket.socket, count: int) -> list[float]:
    times = []
    for i in range(count):
        message = i.to_bytes(4, "big") * 16
        t0 = time.perf_counter()
        conn.sendall(message)
        assert _read_exactly(conn, len(message)) == message
        times.append(time.perf_counter() - t0)
    return times


def test_adds_the_delay_once_each_way(upstream: Upstream) -> None:
    direct = socket.create_connection(("127.0.0.1", upstream.port), timeout=10)
    direct.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    client, listener = _through(upstream, DELAY)
    straight = statistics.median(_round_trips(direct, 50))
    proxied = _round_trips(client, 50)
    added = statistics.median(proxied) - straight
    assert min(proxied) >= 2 * DELAY, "a round trip came back before the delay each way"
    # Once each way, not twice (4 delays): the margin is one delay, since under the suite's
    # load a proxy thread's wake-up after its sleep can take milliseconds.
    assert 2 * DELAY <= added < 3 * DELAY, f"added {added * 1000:.2f} ms"
    for conn in (direct, client):
        conn.close()
    listener.close()


def test_back_to_back_chunks_are_not_queued_behind_each_others_delay(upstream: Upstream) -> None:
    # A delay long beside the machine's scheduling noise (the suite runs three workers on two
    # cores, where a 0.5 ms sleep took far longer and a 5 ms delay left no margin): serialised,
    # 20 chunks would take 20 delays each way; released each at its own time, about 2.
    delay = 0.05
    client, listener = _through(upstream, delay)
    t0 = time.perf_counter()
    for i in range(20):  # 20 messages sent at once: each delayed, none waiting for another
        client.sendall(i.to_bytes(4, "big"))
        time.sleep(0.0005)
    sent = time.perf_counter() - t0
    _read_exactly(client, 80)
    elapsed = time.perf_counter() - t0
    assert elapsed >= 2 * delay, f"{elapsed * 1000:.1f} ms: back before the delay each way"
    assert elapsed - sent < 20 * delay / 2, f"{elapsed * 1000:.1f} ms: the delays were serialised"
    client.close()
    listener.close()


def test_a_close_on_the_client_side_closes_the_server_side(upstream: Upstream) -> None:
    client, listener = _through(upstream, DELAY)
    client.sendall(b"hello")
    assert _read_exactly(client, 5) == b"hello"
    client.close()
    assert upstream.closed_by_peer.wait(5), "the server never saw the client's close"
    listener.close()


def test_a_close_on_the_server_side_closes_the_client_side(upstream: Upstream) -> None:
    client, listener = _through(upstream, DELAY)
    client.sendall(b"hello")
    assert _read_exactly(client, 5) == b"hello"
    for conn in upstream.conns:
        conn.shutdown(socket.SHUT_RDWR)
        conn.close()
    client.settimeout(5)
    assert client.recv(10) == b"", "the client's end stayed open"
    client.close()
    listener.close()
