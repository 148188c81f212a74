"""Skewed clocks in chaos (inventory/cluster/skew.py, inventory/chaos/clocks.py): each order and
stock host its own offset, applied to every program of that host and to no other host's; the
environment really shifts a child Python's wall clock and leaves its sleeps, timed waits and
threads working; and the probe reads a skewed server's clock from its answers. Needs Debian's
`faketime` package (scripts/ensure-servers.sh --test installs it): fails loudly without."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from inventory.chaos import clocks, report
from inventory.cluster import deploy, nodes, skew, skew_probe, topology
from inventory.cluster.secrets import Secrets

ORDER_AND_STOCK = {"order1", "order2", "stock1", "stock2"}


@pytest.mark.parametrize("seed", [1, 2, 3, 17, 1000])
def test_each_order_and_stock_host_has_its_own_offset_within_two_seconds(seed: int) -> None:
    offsets = skew.offsets(seed)
    assert set(offsets) == ORDER_AND_STOCK == set(skew.skewed_hosts())
    assert len(set(offsets.values())) == len(offsets)  # each its own
    assert all(1.0 <= abs(o) <= 2.0 for o in offsets.values()), offsets
    # Within each role one host ahead and one behind: a request may reach either.
    assert offsets["order1"] > 0 > offsets["order2"]
    assert offsets["stock1"] < 0 < offsets["stock2"]
    assert skew.offsets(seed) == offsets  # the seed decides


def test_the_spec_is_libfaketimes_relative_seconds_and_stays_within_two() -> None:
    assert skew.spec(1.7) == "+1.7" and skew.spec(-1.25) == "-1.2" and skew.spec(2) == "+2.0"
    with pytest.raises(ValueError):
        skew.spec(2.5)


def _state(home: Path, offsets: dict[str, float]) -> deploy.ClusterState:
    Secrets().save(home)
    return deploy.ClusterState(str(home), settings={"FENCING": "true"}, skew=offsets)


def test_every_program_of_a_skewed_host_runs_on_its_clock_and_no_other(tmp_path: Path) -> None:
    offsets = skew.offsets(1)
    state = _state(tmp_path, offsets)
    programs = deploy._services(state, {"FAULT_INJECTION": "true"})
    # The replicas under gunicorn, the reconcilers, the relays and the deliverers of webhooks:
    # each on its host's clock.
    assert {p.name for p in programs} == ORDER_AND_STOCK | {
        "rec1",
        "rec2",
        "rel1",
        "rel2",
        "wh1",
        "wh2",
    }
    for proc in programs:
        env = proc.env
        assert env["FAKETIME"] == skew.spec(offsets[proc.host]), proc.name
        assert env["LD_PRELOAD"] == skew.library() and Path(env["LD_PRELOAD"]).is_file()
        assert env["FAKETIME_DONT_FAKE_MONOTONIC"] == "1"
        assert env["FAKETIME_FORCE_MONOTONIC_FIX"] == "0"
        assert env["PYTHONPATH"].split(os.pathsep)[0] == str(skew.SITE)
    # The databases, ZooKeeper, Redis, its sentinels and the balancers keep the true clock:
    # they have no offset, and a program of theirs is left as it is.
    others = [h for h in topology.HOSTS if h.name not in ORDER_AND_STOCK]
    assert not [h.name for h in others if h.name in offsets]
    for host in others:
        plain = nodes.Proc(host.name, host.name, ["true"], str(tmp_path / "x.log"), {"A": "1"})
        assert deploy.on_its_clock(state, plain).env == {"A": "1"}
    # A host's clock is not a setting: the chaos run's comparison sees FAULT_INJECTION alone.
    state.procs = {p.name: p for p in programs}
    assert deploy.stock_settings_added(state) == {"FAULT_INJECTION": "true"}


def test_the_clocks_are_kept_in_the_state_file_so_a_restart_keeps_them(tmp_path: Path) -> None:
    """The nemesis restarts a killed program from the state file: its clock comes back too."""
    state = _state(tmp_path, skew.offsets(2))
    state.procs = {p.name: p for p in deploy._services(state, {})}
    state.save()
    again = deploy.load_state(tmp_path)
    assert again is not None and again.skew == skew.offsets(2)
    assert again.proc("order2").env["FAKETIME"] == skew.spec(skew.offsets(2)["order2"])
    unskewed = _state(tmp_path, {})
    assert not any("FAKETIME" in p.env for p in deploy._services(unskewed, {}))


def test_skew_is_on_by_default_and_a_switch_turns_it_off() -> None:
    assert clocks.offsets_for(True, 1, {}) == skew.offsets(1)
    assert clocks.offsets_for(True, 1, {clocks.SWITCH: "off"}) == {}
    assert clocks.offsets_for(True, 1, {clocks.SWITCH: "0"}) == {}
    assert clocks.offsets_for(False, 1, {}) == {}


CHILD = """
import datetime, json, threading, time
told = {"time": time.time(), "now": datetime.datetime.now().timestamp()}
began = time.monotonic(); time.sleep(0.3); told["sleep"] = time.monotonic() - began
began = time.monotonic(); threading.Event().wait(0.3); told["wait"] = time.monotonic() - began
def work():
    total = 0
    for i in range(400_000):
        total += i
began = time.monotonic()
threads = [threading.Thread(target=work) for _ in range(2)]
[t.start() for t in threads]; [t.join() for t in threads]
told["threads"] = time.monotonic() - began
print(json.dumps(told))
"""


def _child(env: dict[str, str]) -> tuple[float, dict[str, float]]:
    before = time.time()
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return before, json.loads(done.stdout)


@pytest.mark.parametrize("offset", [1.7, -1.4])
def test_a_program_under_the_skew_reads_a_shifted_clock_and_still_waits_on_time(
    offset: float,
) -> None:
    before, plain = _child({})
    assert 0 <= plain["time"] - before <= 1.0, plain  # the true clock, as a check of the check
    before_skewed, told = _child(skew.env(offset))
    for clock in ("time", "now"):  # time.time() and datetime.now(): the child started late
        assert offset - 0.05 <= told[clock] - before_skewed <= offset + 1.0, (clock, told)
    assert 0.29 <= told["sleep"] < 0.8 and 0.29 <= told["wait"] < 0.8, told
    # Two busy threads hand the interpreter's lock to each other as fast as without the skew
    # (with libfaketime's monotonic "fix" on, each timed wait for it ended at once: 20 times
    # slower, measured 0.27 s against 5.3 s).
    assert told["threads"] < 3 * plain["threads"] + 0.3, (told, plain)


def test_the_probe_reads_a_skewed_servers_clock_from_its_answers(tmp_path: Path) -> None:
    from inventory.local.servers import free_port, stop_pid

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        env={**os.environ, **skew.env(-1.6)},
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # Answering first, then a whole span of answers: under a loaded machine the server
        # came up late in the first span, and a few answers narrowed the offset less.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        seen = None
        while seen is None and time.monotonic() < deadline:
            seen = skew_probe.measure_offset("127.0.0.1", port)
        assert seen is not None and seen[0] - 0.02 <= -1.6 <= seen[1] + 0.02, seen
        assert seen[1] - seen[0] < 0.5, seen  # a second of answers narrows it
        assert skew_probe.preloaded(server.pid) and not skew_probe.preloaded(os.getpid())
    finally:
        stop_pid(server.pid)


def test_the_report_tells_each_hosts_clock_and_ck_judges_it() -> None:
    hosts = {
        "order1": {"offset_s": 1.7, "under_faketime": "3/3", "measured_s": [1.68, 1.72]},
        "pg1": {"offset_s": None, "under_faketime": "0/9"},
    }
    observed = {"ok": True, "hosts": hosts, "wrong": []}
    table = report.clocks_markdown({"clocks": observed})
    assert "| order1 | +1.7 | +1.68 .. +1.72 | 3/3 |" in table
    assert "| pg1 | true clock |  | 0/9 |" in table
    assert report.clocks_markdown({"clock_offsets": {}}) == ""
    [valid] = clocks.verdicts({"clocks": observed})
    assert valid.check == "CK" and valid.verdict == "valid" and "order1 +1.7 s" in valid.detail
    wrong = {**observed, "ok": False, "wrong": ["pg1: 1 of 9 processes under libfaketime"]}
    [unknown] = clocks.verdicts({"clocks": wrong})
    assert unknown.verdict == "unknown" and unknown.counterexamples == wrong["wrong"]
    assert clocks.verdicts({"clock_offsets": {}}) == []


def test_the_sleep_of_the_skewed_hosts_is_left_alone_without_libfaketime() -> None:
    """The site folder's sleep (skewed_site/sitecustomize.py) replaces `time.sleep` only in a
    program that runs under libfaketime (the tests above run it there)."""
    sleep = time.sleep
    from inventory.cluster.skewed_site import sitecustomize

    assert "libfaketime" not in os.environ.get("LD_PRELOAD", "")
    assert time.sleep is sleep and sitecustomize.__name__.endswith("sitecustomize")
