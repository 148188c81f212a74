"""The intruder: a host on the cluster's network that tries, during the load, to break in
(least privilege, every part). Two runs, each inside a host's namespace
(`python -m inventory.chaos.intruder`):

- `stranger`, from the intruder host, with no credential at all: ZooKeeper, Redis and its
  sentinels, PostgreSQL (as every role and the superuser), the stock service's admin and
  service routes (on_*.py);
- `order-replica`, from an order host with the order service's own credentials, as if one of
  its replicas were taken over: whatever lies beyond what the order service needs;
- `impostor` (with TLS), from the intruder host with a valid certificate of the cluster's CA
  for its own address, standing in for every TLS server: each client must refuse the name
  (impostor.py).

Every attempt must be refused; `verdict` makes one that was not a violation of the run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from inventory.chaos.verdict import VALID, VIOLATED, Verdict
from inventory.cluster import netns, tls, topology
from inventory.cluster.deploy import ClusterState

RUNS = {"stranger": "intruder", "order-replica": "order1", "impostor": "intruder"}  # from


def _impostor_env(state: ClusterState) -> dict[str, str]:
    """A certificate the cluster's CA signs for the intruder host's own address (made by the
    operator, as a host of the cluster would be given one), and the CA the clients check."""
    me = topology.host("intruder").address
    folder = tls.make_server(Path(state.home), "impostor", [me])
    return {
        "INVENTORY_IMPOSTOR_CA": state.secrets.tls_ca,
        "INVENTORY_IMPOSTOR_CERT": str(folder / "impostor.crt"),
        "INVENTORY_IMPOSTOR_KEY": str(folder / "impostor.key"),
    }


def break_in(state: ClusterState) -> list[dict[str, Any]]:
    """Every run (the impostor's with TLS only); every attempt with who made it."""
    found = []
    for who, host in RUNS.items():
        if who == "impostor" and not state.secrets.tls_ca:
            continue
        credentials = state.secrets.env_for("order") if who == "order-replica" else {}
        if who == "impostor":
            credentials = _impostor_env(state)
        tls_flag = {"INVENTORY_INTRUDER_TLS": "1"} if state.secrets.tls_ca else {}
        argv = netns.in_host(
            topology.host(host).namespace, [sys.executable, "-m", "inventory.chaos.intruder", who]
        )
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, **credentials, **tls_flag},
        )
        if done.returncode != 0:
            raise RuntimeError(f"the intruder's {who} run failed: {done.stderr.strip()[-300:]}")
        found += [{"who": who, **a} for a in json.loads(done.stdout)]
    return found


def summary(attempts: list[dict[str, Any]]) -> dict[str, Any]:
    """Per run and target: attempted, refused; and every attempt that was not refused."""
    tried = Counter((a["who"], a["target"]) for a in attempts)
    refused = Counter((a["who"], a["target"]) for a in attempts if a["refused"])
    return {
        "attempts": len(attempts),
        "refused": sum(refused.values()),
        "by_target": {
            f"{who} -> {target}": {"attempted": n, "refused": refused[(who, target)]}
            for (who, target), n in sorted(tried.items())
        },
        "not_refused": [a for a in attempts if not a["refused"]],
    }


def describe(attempts: list[dict[str, Any]]) -> str:
    told = summary(attempts)
    parts = ", ".join(
        f"{key} {v['refused']}/{v['attempted']}" for key, v in told["by_target"].items()
    )
    return f"{told['refused']} of {told['attempts']} attempts refused ({parts})"


def verdict(attempts: list[dict[str, Any]]) -> Verdict:
    bad = [f"{a['who']}: {a['what']}: {a['answer']}" for a in attempts if not a["refused"]]
    return Verdict(
        "IN",
        "every intrusion attempt refused",
        VIOLATED if bad else VALID,
        describe(attempts),
        bad[:20],
    )
