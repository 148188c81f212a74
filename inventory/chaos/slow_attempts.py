"""The `slow-first-attempts` fault: first attempts held between the Redis check and the lock.

The story (issue 28): goods sold out; order O's first reduceStock attempt passes the Redis
pre-filter and is slow to reach the lock; the order service gives up on it
(STOCK_CALL_TIMEOUT) and retries under the same flag; the retry is refused (409
insufficient_stock: O FAILED); stock comes back (a cancel, an expired hold); then O's first
attempt reaches the lock. It must be refused too: the refusal is the flag's decision.

How the fault makes it, for real, on the cluster:
- the delay: the stock service's own fault point `delay_before_deduct` (shared/faults.py),
  which sits exactly there, after the pre-filter and before the lock. It exists only with
  FAULT_INJECTION=true, so the run starts the stock replicas with it for the runs that
  schedule this fault, and without it again afterwards (run.py; never in deploy/). While the
  fault holds, the nemesis arms it for one attempt every ARM_EVERY seconds, through the admin
  route (PUT /faults/delay_before_deduct, the admin token); the next attempt that passes the
  pre-filter, on either replica, sleeps DELAY there (10 s): past the order service's call
  timeout (4 s), so it is given up on and retried, and the retry, most often not held, is
  decided first; and on until about when the holds placed at the retry expire.
  The stock replicas' own logs say how many attempts were held ("fault injected").
  A delay in the network could not make this story: one before the pre-filter finds the flag
  decided and is answered from the database, and this kernel has no netem anyway.
- the returns: the fault's demand (workload.py, SCARCE): while it holds, every buyer orders
  one unit of one of 3 scarce goods ids (9 units each), and nearly every unit placed
  comes back: holds left to expire (HOLD_SECONDS), orders cancelled once placed. So the ids
  are sold out most of the time (the retries are refused), and units keep coming back while
  the delayed first attempts sleep.

What the run counts of the story: late_attempts.py.
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import httpx

from inventory.chaos.after_sale import HOLD_SECONDS
from inventory.cluster import topology
from inventory.cluster.deploy import ClusterState

POINT = "delay_before_deduct"
CALL_TIMEOUT = float(topology.SERVICE_SETTINGS["STOCK_CALL_TIMEOUT"])
RECONCILE_INTERVAL = float(topology.SERVICE_SETTINGS["RECONCILE_INTERVAL"])
# Held this long: given up on, retried and decided meanwhile; and waking about when the holds
# that sold the goods out at the retry expire (placed then, due HOLD_SECONDS after, and
# cancelled at the reconcilers' next pass): 4 + 5 + 1 = 10 s here.
DELAY = CALL_TIMEOUT + HOLD_SECONDS + RECONCILE_INTERVAL / 2
ARM_EVERY = 0.5  # one attempt held every half second: about 20 of the 32 stock threads asleep
STOCK_SETTINGS = {"FAULT_INJECTION": "true"}  # what the stock replicas need for the fault
INJECTED = f"fault injected: {POINT}"  # the stock service's log line (shared/faults.py)


class _Arming:
    """Arms the fault for one attempt every ARM_EVERY s until stopped. A firing not taken is
    not added to: arming sets the count to one. A stock worker whose threads are all asleep in
    the fault answers only when one wakes, so each request may wait up to DELAY: the arming
    slows down with the service it slows down."""

    def __init__(self, admin: dict[str, str]) -> None:
        self.admin = admin
        self.armed = 0
        self.failed = 0
        self.disarmed = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _client(self) -> httpx.Client:
        return httpx.Client(base_url=topology.STOCK_URL, timeout=DELAY + 2, headers=self.admin)

    def _arm(self, client: httpx.Client, value: float) -> bool:
        try:
            answer = client.put(f"/faults/{POINT}", json={"value": value, "times": 1})
            return answer.status_code == 200
        except httpx.HTTPError:
            return False

    def _loop(self) -> None:
        with self._client() as client:
            while not self._stop.is_set():
                if self._arm(client, DELAY):
                    self.armed += 1
                else:
                    self.failed += 1
                self._stop.wait(ARM_EVERY)

    def stop(self) -> None:
        """No more arming; the firing left, if any, made a 0 s one (three tries): the admin
        route has no disarm (`times` is at least 1), and the replicas run without fault
        injection after the run anyway."""
        self._stop.set()
        self._thread.join(DELAY + 5)
        with self._client() as client:
            for _ in range(3):
                if self._arm(client, 0.0):
                    self.disarmed = True
                    return
                time.sleep(0.5)


_arming: list[_Arming] = []
_log_offsets: dict[str, int] = {}
held: list[int] = []  # attempts the stock replicas held, per window of the fault


def _stock_logs(state: ClusterState) -> dict[str, Path]:
    return {h.name: Path(state.proc(h.name).log) for h in topology.by_role("stock")}


def inject(state: ClusterState, rng: random.Random) -> str:
    for name, log in _stock_logs(state).items():
        _log_offsets[name] = log.stat().st_size if log.exists() else 0
    _arming.append(_Arming(state.admin_headers()))
    return (
        f"{POINT} armed for one attempt every {ARM_EVERY:g} s, each held {DELAY:g} s between "
        f"the pre-filter and the lock (STOCK_CALL_TIMEOUT {CALL_TIMEOUT:g} s); the buyers order "
        "the scarce goods, left to expire or cancelled once placed"
    )


def heal(state: ClusterState) -> str:
    armed = failed = 0
    disarmed = True
    while _arming:
        arming = _arming.pop()
        arming.stop()
        armed, failed = armed + arming.armed, failed + arming.failed
        disarmed = disarmed and arming.disarmed
    count = 0
    for name, log in _stock_logs(state).items():
        if log.exists():
            with open(log, "rb") as f:
                f.seek(_log_offsets.get(name, 0))
                count += f.read().decode(errors="replace").count(INJECTED)
    _log_offsets.clear()
    held.append(count)
    return (
        f"{count} attempts held {DELAY:g} s (the stock replicas' logs), armed {armed} times"
        + (f", {failed} arming requests failed" if failed else "")
        + ("; disarmed" if disarmed else "; NOT disarmed (three tries failed)")
    )


def forget() -> None:
    while _arming:
        _arming.pop().stop()
    _log_offsets.clear()
