"""The `slow-first-attempts` fault: first attempts held between the Redis check and the lock.

The story of a refusal that must stay a refusal: goods sold out; order O's first reduceStock
attempt passes the Redis pre-filter and is slow to reach the lock; the order service gives up on it
(STOCK_CALL_TIMEOUT) and retries under the same flag; the retry is refused (409
insufficient_stock: O FAILED); stock comes back; then O's first attempt reaches the lock. It
must be refused too: the refusal is the flag's decision (I9, a refusal stays a refusal).

How the fault makes it, for real and every run, on the cluster, in cycles (`plan`):
- the shelf emptied: the scarce goods' levels counted to 0 (the admin route's adjustments,
  a compare-and-swap: a ledger entry, as the checks count them);
- the delay: the stock service's own fault point `delay_before_deduct` (shared/faults.py),
  after the pre-filter and before the lock, armed for the next HELD_PER_CYCLE attempts (the
  admin route, PUT /faults): they sleep DELAY (12 s) there, past the order service's call
  timeout (4 s), so each is given up on and retried; the firings are all taken within a
  moment, so the retries are not held, and they find the shelf empty: refused. It exists only
  with FAULT_INJECTION=true: the run starts the stock replicas with it for the runs that
  schedule this fault, and without it again afterwards (run.py; never in deploy/);
- the stock back: RESTOCK_AT after the arming, when every retry has been refused and before
  any held attempt wakes, RESTOCK units restocked on each, more than the buyers take before
  the held attempts wake. Each held attempt then reaches the lock with its goods on the shelf.
Before, the attempts were armed one every half second and the shelf left to the buyers' holds
and cancels: the story lined up in only 0-2 quick runs of 4. Lined up by the nemesis it
depends on no timing but the ones above, which hold with seconds to spare.
The buyers' demand (workload.py, SCARCE) sends every order to the scarce goods meanwhile, so
the held attempts are theirs; those orders are never cancelled nor left to expire
(after_sale.scarce_intent): a unit coming back between the emptying and a retry would let the
retry through (the first runs of the cycles: 3 of 12 held orders refused, the rest deducted by
a retry after holds expired onto the emptied shelf). The stock replicas' own logs say how many
attempts were held ("fault injected").
A delay in the network could not make this story: one before the pre-filter finds the flag
decided and is answered from the database, and this kernel has no netem anyway.

What the run counts of the story: late_attempts.py.
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from inventory.cluster import topology
from inventory.cluster.deploy import ClusterState

POINT = "delay_before_deduct"
CALL_TIMEOUT = float(topology.SERVICE_SETTINGS["STOCK_CALL_TIMEOUT"])
# Held this long: given up on after the call timeout, retried and refused on the empty shelf
# (under the fault the retry itself can take up to 6 s to be answered), and the shelf stocked
# again 2 s before it wakes: 4 + 6 + 2 = 12 s.
DELAY = CALL_TIMEOUT + 8.0
HOLD = 30.0  # the fault's window
HELD_PER_CYCLE = 6  # attempts held per cycle: a few of the stock service's 32 threads asleep
# The shelf stocked again this long after the arming: after the held attempts' retries were
# refused, before the held attempts wake.
RESTOCK_AT = DELAY - 2.0
RESTOCK = 60  # units back on each scarce id: the buyers take about 8 a second from each
STOCK_SETTINGS = {"FAULT_INJECTION": "true"}  # what the stock replicas need for the fault
INJECTED = f"fault injected: {POINT}"  # the stock service's log line (shared/faults.py)


def plan(hold: float) -> list[float]:
    """When each cycle starts, in seconds from the fault: one after another, each only if its
    held attempts wake (DELAY after the arming, plus a second for their own way to it) before
    the heal. With the fault's 30 s: two cycles, at 0 and 11 s."""
    starts: list[float] = []
    while (start := len(starts) * (DELAY + 1.0)) + DELAY + 1.0 <= hold:
        starts.append(start)
    return starts


class _Story:
    """The cycles of `plan`, until stopped: the scarce goods emptied, attempts held, the shelf
    stocked again. A stock worker whose threads are all asleep answers only when one wakes, so
    a request here may wait up to DELAY: every request gets that long."""

    def __init__(self, admin: dict[str, str], scarce: list[str], hold: float) -> None:
        self.admin = admin
        self.scarce = scarce
        self.starts = plan(hold)
        self.armed = self.failed = self.restocked = self.sent = 0
        self.disarmed = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _client(self) -> httpx.Client:
        return httpx.Client(base_url=topology.STOCK_URL, timeout=DELAY + 2, headers=self.admin)

    def _arm(self, client: httpx.Client, value: float, times: int) -> bool:
        try:
            answer = client.put(f"/faults/{POINT}", json={"value": value, "times": times})
            return answer.status_code == 200
        except httpx.HTTPError:
            return False

    def _adjust(self, client: httpx.Client, goods: str, body: dict[str, Any]) -> int:
        self.sent += 1
        reference = f"slow-first-attempts-{id(self)}-{self.sent}"  # not the run's: HA's alone
        answer = client.post(f"/stock/{goods}/adjustments", json={**body, "reference": reference})
        return answer.status_code

    def _empty(self, client: httpx.Client) -> bool:
        """Each scarce goods' level counted to 0 (a compare-and-swap against the level just
        read, again while an order moves it): ledger entries, as I1 and the LA figures count
        them. A PUT /stock would re-seed the goods, which the run's checks take as its start."""
        try:
            for goods in self.scarce:
                for _ in range(10):
                    level = int(client.get(f"/stock/{goods}").json()["num"])
                    body = {"reason": "count", "expected": level, "num": 0}
                    if level == 0 or self._adjust(client, goods, body) == 201:
                        break
                else:
                    return False
            return True
        except (httpx.HTTPError, KeyError, ValueError):
            return False

    def _restock(self, client: httpx.Client) -> bool:
        try:
            body = {"reason": "restock", "delta": RESTOCK}
            return all(self._adjust(client, g, body) == 201 for g in self.scarce)
        except httpx.HTTPError:
            return False

    def _loop(self) -> None:
        started = time.monotonic()
        with self._client() as client:
            for start in self.starts:
                if self._stop.wait(max(0.0, started + start - time.monotonic())):
                    return
                if not (self._empty(client) and self._arm(client, DELAY, HELD_PER_CYCLE)):
                    self.failed += 1
                    continue
                self.armed += 1
                if self._stop.wait(RESTOCK_AT):
                    return
                if self._restock(client):
                    self.restocked += 1
                else:
                    self.failed += 1

    def stop(self) -> None:
        """No more cycles; a firing left, if any, made a 0 s one (three tries): the admin route
        has no disarm (`times` is at least 1), and the replicas run without fault injection
        after the run anyway."""
        self._stop.set()
        self._thread.join(2 * DELAY + 5)
        with self._client() as client:
            for _ in range(3):
                if self._arm(client, 0.0, 1):
                    self.disarmed = True
                    return
                time.sleep(0.5)


_arming: list[_Story] = []
scarce: list[str] = []  # the run's scarce goods ids (run.py sets them)
_log_offsets: dict[str, int] = {}
held: list[int] = []  # attempts the stock replicas held, per window of the fault


def _stock_logs(state: ClusterState) -> dict[str, Path]:
    return {h.name: Path(state.proc(h.name).log) for h in topology.by_role("stock")}


def inject(state: ClusterState, rng: random.Random) -> str:
    for name, log in _stock_logs(state).items():
        _log_offsets[name] = log.stat().st_size if log.exists() else 0
    story = _Story(state.admin_headers(), list(scarce), HOLD)
    _arming.append(story)
    return (
        f"{len(story.starts)} cycles (at {', '.join(f'{t:g}' for t in story.starts)} s): "
        f"{', '.join(scarce) or 'no scarce goods'} emptied, {POINT} armed for the next "
        f"{HELD_PER_CYCLE} attempts, each held {DELAY:g} s between the pre-filter and the lock "
        f"(STOCK_CALL_TIMEOUT {CALL_TIMEOUT:g} s), {RESTOCK} units restocked on each "
        f"{RESTOCK_AT:g} s after; the buyers order the scarce goods"
    )


def heal(state: ClusterState) -> str:
    armed = failed = restocked = 0
    disarmed = True
    while _arming:
        arming = _arming.pop()
        arming.stop()
        armed, failed = armed + arming.armed, failed + arming.failed
        restocked += arming.restocked
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
        f"{count} attempts held {DELAY:g} s (the stock replicas' logs), armed {armed} times, "
        f"the shelf stocked again {restocked} times"
        + (f", {failed} cycles failed (the admin route did not answer)" if failed else "")
        + ("; disarmed" if disarmed else "; NOT disarmed (three tries failed)")
    )


def forget() -> None:
    while _arming:
        _arming.pop().stop()
    _log_offsets.clear()
