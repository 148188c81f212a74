"""Whether the hosts' clocks are what the cluster's state says (skew.py): each replica's clock
as its own answers tell it, and which processes run under libfaketime.

A replica's clock is read from the `Date` header gunicorn sets on every answer (its wall clock,
in whole seconds): an answer dated D, sent at t0 and received at t1 on the true clock, tells
floor(t + offset) = D for some t in [t0, t1], so offset is in [D - t1, D - t0 + 1). A second
of answers narrows the interval to about the sampling step. The processes: libfaketime is
loaded in a process when its maps name it (/proc/PID/maps), for every process in each host's
namespace: all of a skewed host's, none of a database's, ZooKeeper's or Redis's.
"""

from __future__ import annotations

import http.client
import threading
import time
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

from inventory.cluster import netns, topology

SAMPLE_STEP = 0.04  # seconds between two answers of one replica
SAMPLE_SPAN = 1.2  # seconds of answers: more than one tick of the Date header


def measure_offset(
    address: str, port: int = topology.SERVICE_PORT, span: float = SAMPLE_SPAN
) -> tuple[float, float] | None:
    """The interval the replica's clock offset lies in, from its answers' Date headers over
    `span` seconds; None when it answered nothing with a Date."""
    low, high = float("-inf"), float("inf")
    conn = http.client.HTTPConnection(address, port, timeout=3)
    until = time.monotonic() + span
    try:
        while time.monotonic() < until:
            try:
                sent = time.time()
                conn.request("GET", "/healthz")
                answer = conn.getresponse()
                answer.read()
                received = time.time()
            except (http.client.HTTPException, OSError):
                conn.close()
                time.sleep(SAMPLE_STEP)
                continue
            dated = answer.getheader("Date")
            if dated:
                at = parsedate_to_datetime(dated).timestamp()
                low, high = max(low, at - received), min(high, at - sent + 1)
            time.sleep(SAMPLE_STEP)
    finally:
        conn.close()
    if low == float("-inf"):
        return None
    return round(low, 2), round(high, 2)


def preloaded(pid: int) -> bool:
    """Whether libfaketime is loaded in the process (its memory maps name it)."""
    try:
        return "libfaketime" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def processes_under_faketime() -> dict[str, tuple[int, int]]:
    """Per host: (processes with libfaketime loaded, processes) in its namespace."""
    found: dict[str, tuple[int, int]] = {}
    for host in topology.HOSTS:
        pids = netns.pids_in(host.namespace)
        found[host.name] = (sum(preloaded(p) for p in pids), len(pids))
    return found


def observe(asked: dict[str, float]) -> dict[str, Any]:
    """Each host's clock as observed against what was asked (host -> offset; the others on
    the true clock): the replicas' measured intervals, sampled side by side, and libfaketime
    in every process of a skewed host and none of the others'. `ok` when all agree."""
    replicas = topology.by_role("stock") + topology.by_role("order")
    measured: dict[str, tuple[float, float] | None] = {}

    def measure(host: topology.Host) -> None:
        measured[host.name] = measure_offset(host.address)

    threads = [threading.Thread(target=measure, args=(h,)) for h in replicas]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    loaded = processes_under_faketime()
    hosts: dict[str, Any] = {}
    wrong: list[str] = []
    for host in topology.HOSTS:
        offset = asked.get(host.name)
        under, total = loaded[host.name]
        seen = measured.get(host.name)
        row: dict[str, Any] = {"offset_s": offset, "under_faketime": f"{under}/{total}"}
        if seen is not None:
            row["measured_s"] = list(seen)
        if (under != total or total == 0) if offset is not None else under != 0:
            wrong.append(f"{host.name}: {under} of {total} processes under libfaketime")
        expected = 0.0 if offset is None else offset
        if host in replicas and (seen is None or not seen[0] - 0.02 <= expected <= seen[1] + 0.02):
            wrong.append(f"{host.name}: asked {expected:+.1f} s, its answers say {seen}")
        hosts[host.name] = row
    return {"ok": not wrong, "hosts": hosts, "wrong": wrong}


def said(observed: dict[str, Any]) -> str:
    """One line for the run's output: each skewed host's offset, asked and measured."""
    parts = []
    for name, row in observed["hosts"].items():
        if row["offset_s"] is None:
            continue
        seen = row.get("measured_s")
        shown = f" (answers: {seen[0]:+.2f}..{seen[1]:+.2f})" if seen else ""
        parts.append(f"{name} {row['offset_s']:+.1f} s{shown}")
    rest = "databases, ZooKeeper, Redis and the balancers on the true clock"
    verdict = "" if observed["ok"] else f"; NOT AS ASKED: {'; '.join(observed['wrong'])}"
    return f"clocks: {', '.join(parts)}; {rest}{verdict}"
