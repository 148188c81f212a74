"""Waiting for the cluster's replicas: each answers its health check, and the balancers count
a replica of each service up again."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Protocol

import httpx

from inventory.cluster import topology
from inventory.cluster.nodes import Proc
from inventory.local.servers import wait_until


class ClusterState(Protocol):
    """What is read of deploy.ClusterState here: each host's program."""

    def proc(self, name: str) -> Proc: ...


def replica_healthy(address: str) -> bool:
    return ok(f"http://{address}:{topology.SERVICE_PORT}/healthz")


def wait_replicas_healthy(state: ClusterState, timeout: float = 90) -> None:
    """Every replica answers /healthz, and haproxy has a replica of each service up."""
    replicas = [h for h in topology.HOSTS if h.role in ("stock", "order")]
    with ThreadPoolExecutor(len(replicas)) as pool:
        list(
            pool.map(
                lambda h: wait_until(
                    lambda: replica_healthy(h.address),
                    timeout,
                    f"{h.name} replica",
                    Path(state.proc(h.name).log),
                    0.25,
                    alive=state.proc(h.name).alive,
                ),
                replicas,
            )
        )
    for url in (topology.ORDER_URL, topology.STOCK_URL):
        wait_until(partial(ok, f"{url}/healthz"), 30, f"haproxy at {url}", interval=0.25)


def ok(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False
