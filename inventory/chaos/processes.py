"""Killing a cluster program and starting it again: the nemesis's plainest faults and heals."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from inventory.cluster.deploy import ClusterState
from inventory.local.servers import wait_until


def kill_replica(name: str) -> Callable[[ClusterState, random.Random], str]:
    def inject(state: ClusterState, rng: random.Random) -> str:
        state.proc(name).kill()
        return f"{name} killed (SIGKILL to its whole process group)"

    return inject


def restart(name: str, ready: Callable[[], bool] | None = None) -> Callable[[ClusterState], None]:
    def heal(state: ClusterState) -> None:
        proc = state.proc(name)
        if not proc.alive():
            proc.start(Path(state.home))
            state.save()
        if ready is not None:
            wait_until(ready, 60, f"{name} after restart", Path(proc.log), 0.2, alive=proc.alive)

    return heal
