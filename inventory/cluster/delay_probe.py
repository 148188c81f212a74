"""How faithful the delaying proxy is (delay_proxy.py): the round trip it adds and what it costs.

An echo server and the proxy in front of it run as programs of their own on loopback; a client
sends a small message and waits for its echo, many times, straight to the server and through
the proxy, alternating in blocks so a busy moment of the machine falls on both. The added round
trip is the difference of the two medians (and of the two 99th percentiles); a faithful proxy
adds 2 x delay (once each way). Its CPU is the proxy process's user + system time over the
chunks it forwarded (two per round trip), read from /proc.

    python -m inventory.cluster.delay_probe --delay-ms 0.5
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

MESSAGE = b"x" * 64
BLOCK = 200  # round trips per block; blocks alternate direct / through the proxy


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _connect(port: int) -> socket.socket:
    deadline = time.monotonic() + 10
    while True:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return s
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _round_trips(conn: socket.socket, count: int) -> list[float]:
    times = []
    for _ in range(count):
        t0 = time.perf_counter()
        conn.sendall(MESSAGE)
        got = 0
        while got < len(MESSAGE):
            got += len(conn.recv(len(MESSAGE) - got))
        times.append(time.perf_counter() - t0)
    return times


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def probe(delay_ms: float, round_trips: int = 4000) -> dict[str, Any]:
    """Round trips straight and through a proxy adding `delay_ms` each way: the added round
    trip (median, p99, in ms) and the proxy's CPU per forwarded chunk (µs)."""
    echo_port, proxy_port = _free_port(), _free_port()
    echo = subprocess.Popen([sys.executable, "-m", "inventory.cluster.delay_probe", "--echo",
                             str(echo_port)])  # fmt: skip
    proxy = subprocess.Popen(
        [sys.executable, "-m", "inventory.cluster.delay_proxy", "--listen",
         f"127.0.0.1:{proxy_port}", "--target", f"127.0.0.1:{echo_port}",
         "--delay-ms", str(delay_ms)],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        direct, through = _connect(echo_port), _connect(proxy_port)
        _round_trips(direct, 100)  # warm both paths
        _round_trips(through, 100)
        straight: list[float] = []
        proxied: list[float] = []
        cpu = 0.0
        for _ in range(max(1, round_trips // BLOCK)):
            straight += _round_trips(direct, BLOCK)
            before = _cpu_seconds(proxy.pid)
            proxied += _round_trips(through, BLOCK)
            cpu += _cpu_seconds(proxy.pid) - before
        direct.close()
        through.close()
    finally:
        for child in (proxy, echo):
            child.kill()
            child.wait()
    ms = 1000.0
    return {
        "delay_ms": delay_ms,
        "round_trips": len(proxied),
        "direct_rtt_ms": {"p50": statistics.median(straight) * ms,
                          "p99": _percentile(straight, 0.99) * ms},
        "proxied_rtt_ms": {"p50": statistics.median(proxied) * ms,
                           "p99": _percentile(proxied, 0.99) * ms},
        "added_rtt_ms": {
            "p50": (statistics.median(proxied) - statistics.median(straight)) * ms,
            "p99": (_percentile(proxied, 0.99) - _percentile(straight, 0.99)) * ms,
        },
        "cpu_us_per_chunk": cpu / (2 * len(proxied)) * 1e6,
    }  # fmt: skip


def _echo(port: int) -> None:
    """Echo every byte back, one thread per connection."""
    import threading

    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(16)

    def echo(conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    while True:
        conn, _ = listener.accept()
        threading.Thread(target=echo, args=(conn,), daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay-ms", type=float, default=0.5)
    parser.add_argument("--round-trips", type=int, default=4000)
    parser.add_argument("--echo", type=int, help=argparse.SUPPRESS)  # the echo server's port
    args = parser.parse_args(argv)
    if args.echo:
        _echo(args.echo)
        return 0
    print(json.dumps(probe(args.delay_ms, args.round_trips), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
