"""A TCP proxy that adds a fixed delay to every chunk, each way: a link's latency where the
kernel has no netem (`tc qdisc ... netem delay` needs the sch_netem module, which this kernel
does not have), in the manner of Toxiproxy's latency toxic.

Each connection gets two directions, and each direction a reader and a writer thread. The
reader stamps every chunk it receives with its arrival time and queues it; the writer sends
each chunk once `arrival + delay` has come. Chunks that arrive back to back are therefore
released back to back, each `delay` after its own arrival: the delay is a link's propagation,
not a per-chunk cost that queues behind the previous one. Bytes and their order are kept.
When one side closes its end (EOF), what it sent before is still delivered, then the other
side's write end is shut (a half-close, as TCP carries it); once both directions have ended,
or either fails, both sockets are closed.

Why threads and time.sleep rather than asyncio: an event loop's timers go through epoll, whose
timeout is in whole milliseconds, so a 0.5 ms delay would become 1 ms; nanosleep is good to
tens of microseconds. What it is not: a kernel link. It delays chunks as the proxy reads them
(not packets or their ACKs), models no bandwidth, loss or reordering, and adds its own cost
(two user-space copies and a thread wake-up per chunk), which delay_probe.py measures.

    python -m inventory.cluster.delay_proxy --listen 10.77.0.31:5433 \\
        --target 10.77.0.31:5432 --delay-ms 0.5 [--delay-file F]  (SIGHUP: F read again)
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import queue
import signal
import socket
import sys
import threading
import time
from pathlib import Path

CHUNK = 65536
PORT = 5433  # on a database host, in front of PostgreSQL's 5432 (the cluster's --link-delay-ms)
PR_SET_TIMERSLACK = 29  # linux/prctl.h


class Delay:
    """The delay every chunk gets, in seconds; settable while connections run (the latency
    bench moves it between rounds without restarting the cluster's PostgreSQL)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds


class _Direction:
    """The bytes of one way of one connection: queued by its reader, released by its writer."""

    def __init__(self, source: socket.socket, sink: socket.socket, delay: Delay) -> None:
        self.source, self.sink, self.delay = source, sink, delay
        # (when it is due, the chunk): b"" is the source's EOF, None a failed socket. A
        # SimpleQueue (C, one futex per hand-over) rather than a Condition over a deque,
        # which allocates a lock per wait: a third of the proxy's CPU per chunk.
        self.queue: queue.SimpleQueue[tuple[float, bytes | None]] = queue.SimpleQueue()

    def read(self) -> None:
        try:
            while True:
                data = self.source.recv(CHUNK)
                self.queue.put((time.monotonic() + self.delay.seconds, data))
                if not data:
                    return
        except OSError:
            self.queue.put((0.0, None))

    def write(self) -> bool:
        """Until EOF: True when the source closed cleanly, False when a socket failed."""
        while True:
            due, data = self.queue.get()
            if data is None:
                return False
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            if not data:
                with contextlib.suppress(OSError):
                    self.sink.shutdown(socket.SHUT_WR)
                return True
            try:
                self.sink.sendall(data)
            except OSError:
                return False


def _serve_connection(client: socket.socket, target: tuple[str, int], delay: Delay) -> None:
    try:
        upstream = socket.create_connection(target, timeout=5)
    except OSError:
        client.close()
        return
    upstream.settimeout(None)
    for s in (client, upstream):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    ways = (_Direction(client, upstream, delay), _Direction(upstream, client, delay))
    ended = threading.Semaphore(0)
    failed = threading.Event()

    def writer(way: _Direction) -> None:
        if not way.write():
            failed.set()
        ended.release()
        if failed.is_set():  # a failed socket ends both ways at once
            _close(client, upstream)

    for way in ways:
        threading.Thread(target=way.read, daemon=True).start()
        threading.Thread(target=writer, args=(way,), daemon=True).start()
    ended.acquire()
    ended.acquire()
    _close(client, upstream)


def _close(*sockets: socket.socket) -> None:
    for s in sockets:
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)
        s.close()


def serve(listener: socket.socket, target: tuple[str, int], delay: Delay) -> None:
    """Accept forever on `listener`, each connection forwarded to `target` with `delay`
    added to every chunk each way."""
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return  # the listener was closed
        threading.Thread(
            target=_serve_connection, args=(client, target, delay), daemon=True
        ).start()


def listen(host: str, port: int) -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(512)
    return listener


def start(host: str, port: int, target: tuple[str, int], delay: float) -> socket.socket:
    """A proxy in a thread of this process (the tests and the probe); close the returned
    listener to stop accepting."""
    listener = listen(host, port)
    threading.Thread(target=serve, args=(listener, target, Delay(delay)), daemon=True).start()
    return listener


def _tight_timers() -> None:
    """Linux lets a sleep overrun by the thread's timer slack (50 µs by default), a tenth of
    the delay asked for; 1 µs instead, for this thread and the threads it starts."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_TIMERSLACK, 1000, 0, 0, 0)


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listen", required=True, type=_address, metavar="HOST:PORT")
    parser.add_argument("--target", required=True, type=_address, metavar="HOST:PORT")
    parser.add_argument("--delay-ms", type=float, required=True)
    parser.add_argument(
        "--delay-file", type=Path, help="on SIGHUP, the delay in ms is read again from this file"
    )
    args = parser.parse_args(argv)
    delay = Delay(args.delay_ms / 1000)
    if args.delay_file:

        def reread(*_: object) -> None:
            with contextlib.suppress(OSError, ValueError):
                delay.seconds = float(args.delay_file.read_text()) / 1000
                print(f"delay now {delay.seconds * 1000} ms each way", flush=True)

        signal.signal(signal.SIGHUP, reread)
    # Threads hand the interpreter over every 5 ms by default; a writer due now should not
    # wait that long behind a reader copying a large chunk.
    sys.setswitchinterval(0.0002)
    _tight_timers()
    listener = listen(*args.listen)
    print(
        f"delaying {args.listen[0]}:{args.listen[1]} -> {args.target[0]}:{args.target[1]} "
        f"by {args.delay_ms} ms each way",
        flush=True,
    )
    serve(listener, args.target, delay)
    return 0


if __name__ == "__main__":
    sys.exit(main())
