"""`inventory demo herd` stopped by Ctrl-C (or SIGTERM) mid-contest exits promptly and quietly.
It used to print "interrupted; what this command started is stopped", then a traceback per
waiter thread, and run on until the non-daemon waiters were done."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from inventory.local.servers import ServerProcess

ROOT = Path(__file__).resolve().parents[2]


def contest_begun(zk: KazooClient, since_ms: int) -> bool:
    """The herd demo's single-node contest (a run after `since_ms`) has its lock node."""
    if not zk.exists("/herd-demo"):
        return False
    runs = [int(r) for r in zk.get_children("/herd-demo") if r.isdigit() and int(r) >= since_ms]
    return any(zk.exists(f"/herd-demo/{r}/low/lock") for r in runs)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_herd_stops_its_waiters_at_once(
    zk_server: ServerProcess, tmp_path: Path, signum: signal.Signals
) -> None:
    # A "running stack" whose ZooKeeper is the test's, so the demo starts no server of its own
    # (its only live process is this test's).
    home = tmp_path / "home"
    home.mkdir()
    state = {
        "home": str(home),
        "order_url": "http://127.0.0.1:1",
        "stock_url": "http://127.0.0.1:1",
        "zk_hosts": zk_server.address,
        "redis_url": "redis://127.0.0.1:1/0",
        "order_database_url": "sqlite:///o.db",
        "stock_database_url": "sqlite:///s.db",
        "lock_backend": "zookeeper",
        "lock_scope": "sku",
        "pids": {"zookeeper": os.getpid()},
    }
    (home / "stack.json").write_text(json.dumps(state))
    env = {**os.environ, "INVENTORY_HOME": str(home), "PYTHONPATH": str(ROOT)}
    since_ms = int(time.time() * 1000)
    # 100 waiters holding 100 ms each: a contest of 10 s or more, interrupted after it began.
    command = [sys.executable, "-m", "inventory.cli", "demo", "herd", "--waiters", "100"]
    demo = subprocess.Popen(
        [*command, "--hold-ms", "100"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    zk = KazooClient(hosts=zk_server.address)
    zk.start(timeout=10)
    try:
        deadline = time.monotonic() + 60
        while not contest_begun(zk, since_ms):
            assert demo.poll() is None, demo.communicate()
            assert time.monotonic() < deadline, "the contest did not begin"
            time.sleep(0.1)
        time.sleep(1.0)
        demo.send_signal(signum)
        sent = time.monotonic()
        try:
            out, err = demo.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            demo.kill()
            out, err = demo.communicate()
            pytest.fail(f"still running 15 s after the signal:\n{err[-3000:]}")
        took = time.monotonic() - sent
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
        zk.stop()
        zk.close()
    assert demo.returncode == (130 if signum == signal.SIGINT else 143), err
    assert took < 6, f"took {took:.1f} s to stop"
    assert "Traceback" not in out + err, err[-3000:]
    assert "what this command started is stopped" in err
