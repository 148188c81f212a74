"""The cluster in network namespaces and `inventory chaos` on it, as a user runs them: the
quick run must come out valid, a run without a lock must be caught overselling, a run without
fencing must be caught losing an update when a worker is paused inside its write, and
`cluster down` must leave nothing behind. Needs root (namespaces, nftables): fails loudly
without it, like every test that needs a server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.chaos]

INVENTORY = [sys.executable, "-m", "inventory.cli"]


def inventory(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*INVENTORY, *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    from inventory.cluster import netns

    if os.geteuid() != 0:
        pytest.fail("the cluster needs root (network namespaces and nftables)")
    if netns.namespaces():
        # Namespace names are the machine's: one cluster at a time, and not the user's.
        pytest.fail("a cluster is running on this machine: `inventory cluster down` first")
    home = tmp_path_factory.mktemp("chaos")
    up = inventory("cluster", "up", timeout=300)
    assert up.returncode == 0, up.stdout + up.stderr
    yield home
    down = inventory("cluster", "down")
    assert down.returncode == 0, down.stdout + down.stderr


def test_status_names_every_host(cluster: Path) -> None:
    status = inventory("cluster", "status", "--json")
    assert status.returncode == 0, status.stdout + status.stderr
    hosts = json.loads(status.stdout)["hosts"]
    roles = sorted(h["role"].split()[0] for h in hosts)
    assert roles.count("zookeeper") == 3 and roles.count("stock") == 2
    assert roles.count("order") == 2 and {"redis", "postgres", "haproxy"} <= set(roles)
    modes = sorted(h["role"] for h in hosts if h["role"].startswith("zookeeper"))
    assert modes == ["zookeeper follower", "zookeeper follower", "zookeeper leader"]
    assert all(h["running"] and h["address"].startswith("10.77.0.") for h in hosts)


def test_quick_chaos_is_valid(cluster: Path) -> None:
    folder = cluster / "quick"
    run = inventory("chaos", "--quick", "--report", str(folder))
    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads((folder / "report.json").read_text())
    assert result["verdict"] == "valid"
    assert [w["fault"] for w in result["windows"]][1:] == [
        "zk-cut-stock",
        "pause-stock-worker",
        "kill-zk-leader",
        "redis-restart",
    ]
    assert result["orders"] >= 500 and result["confirmed"] > 0
    paused = next(f["what"] for f in result["faults"] if f["name"] == "pause-stock-worker")
    assert "inside its write transaction" in paused, paused
    history = (folder / "history.jsonl").read_text().splitlines()
    assert len(history) == result["sends"]
    assert (folder / "timeline.png").stat().st_size > 10_000


def test_without_a_lock_the_checker_sees_the_oversell(cluster: Path) -> None:
    folder = cluster / "nolock"
    run = inventory(
        "chaos",
        "--lock",
        "none",
        "--faults",
        "kill-stock-workers",
        "--orders",
        "300",
        "--report",
        str(folder),
    )
    assert run.returncode == 1, run.stdout + run.stderr
    verdicts = json.loads((folder / "report.json").read_text())["verdicts"]
    broken = {v["check"] for v in verdicts if v["verdict"] == "violated"}
    assert "I1" in broken, verdicts


def test_without_fencing_a_worker_paused_inside_its_write_loses_an_update(cluster: Path) -> None:
    # The paused worker holds its rows in PostgreSQL. After its session expires the next holder
    # reads the level it has not committed yet, and its plain UPDATE waits for the row; when
    # the paused worker resumes and commits, that UPDATE overwrites the deduction just made.
    # With fencing the resumed worker's deduction still lands (its compare-and-set ran before
    # the pause), and the next holder's compare-and-set fails, so it reads again
    # (test_quick_chaos_is_valid has the same fault with fencing on).
    folder = cluster / "unfenced"
    run = inventory(
        "chaos",
        "--no-fencing",
        "--faults",
        "pause-stock-worker",
        "--orders",
        "300",
        "--report",
        str(folder),
    )
    assert run.returncode == 1, run.stdout + run.stderr
    result = json.loads((folder / "report.json").read_text())
    assert "inside its write transaction" in result["faults"][0]["what"], result["faults"]
    broken = {v["check"] for v in result["verdicts"] if v["verdict"] == "violated"}
    assert "I1" in broken, result["verdicts"]


def test_down_leaves_no_namespace_link_or_process(cluster: Path) -> None:
    from inventory.cluster import netns

    down = inventory("cluster", "down")
    assert down.returncode == 0, down.stdout + down.stderr
    assert netns.namespaces() == [] and netns.links() == []
    left = subprocess.run(["pgrep", "-f", "invc-cluster"], capture_output=True, text=True)
    assert left.stdout.strip() == "", left.stdout
    again = inventory("cluster", "status", "--json")
    assert again.returncode == 1 and json.loads(again.stdout)["running"] is False
