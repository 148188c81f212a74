"""Each order and stock host on a clock of its own: the programs of a skewed host (its replica
under gunicorn, and its reconciler or relay) run under libfaketime (Debian's `faketime`
package), their wall clock shifted by the host's offset; the databases, ZooKeeper and Redis
stay on the machine's clock, as a database host's NTP-disciplined clock would.

The environment, and why each part:
- LD_PRELOAD=libfaketime.so.1 and FAKETIME="+1.7" (seconds, one decimal): `time()`,
  `gettimeofday()` and `clock_gettime(CLOCK_REALTIME)`, so `time.time()` and
  `datetime.now()` and every timestamp a host writes, read its offset.
- FAKETIME_DONT_FAKE_MONOTONIC=1: hosts disagree on the wall clock, not on how long a second
  is; and with a faked monotonic clock every timed wait on a lock or an event hangs (Python's
  `sem_clockwait`, which libfaketime 0.9.10 does not intercept, waits for a faked deadline on
  the real clock): timeouts, gunicorn's worker timeout and ZooKeeper's session pings read it.
- FAKETIME_FORCE_MONOTONIC_FIX=0: with the monotonic clock left real, 0.9.10's "fix" (on by
  default on glibc 2.30 and later) turns every timed wait on a monotonic condition variable
  into one that times out at once; the interpreter's GIL waits on one, so two busy threads
  spin on it: 20 times slower (0.27 s, 5.3 s with the fix on), and gunicorn 7 to 10 times
  (1,000-1,800 requests/s, 110-185 with it on; 1,600-2,300 with it off, as without skew).
- the folder `skewed_site` first on PYTHONPATH: its sitecustomize gives `time.sleep` a
  working body (0.9.10 turns Python 3.11's absolute monotonic sleep into EINVAL).
- the cache left on (no FAKETIME_NO_CACHE): it only decides how often the spec is read again,
  and ours, in the environment, never changes for a program's life.
"""

from __future__ import annotations

import glob
import os
import random
from pathlib import Path

from inventory.cluster import topology

PACKAGE = "faketime"  # Debian's: the wrapper, and libfaketime (its library) with it
LIBRARY_PATTERNS = (
    "/usr/lib/*/faketime/libfaketime.so.1",  # Debian and Ubuntu: dpkg -L libfaketime
    "/usr/lib/faketime/libfaketime.so.1",
    "/usr/local/lib/faketime/libfaketime.so.1",
)
SITE = Path(__file__).with_name("skewed_site")
SKEWED_ROLES = ("order", "stock")  # the hosts of our programs; the rest keep the true clock
MAX_OFFSET = 2.0  # seconds, either way
# At least a second either way: a replica's Date header (whole seconds) then tells its
# clock from the true one whatever the moment (measure_offset).
MIN_OFFSET = 1.0
ENV_KEYS = (
    "LD_PRELOAD",
    "FAKETIME",
    "FAKETIME_DONT_FAKE_MONOTONIC",
    "FAKETIME_FORCE_MONOTONIC_FIX",
    "PYTHONPATH",
)


class SkewError(RuntimeError):
    """libfaketime is missing: the message names the package."""


def library() -> str:
    """The path of libfaketime.so.1, or SkewError naming the package to install."""
    for pattern in LIBRARY_PATTERNS:
        found = sorted(glob.glob(pattern))
        if found:
            return found[0]
    raise SkewError(
        f"skewed clocks need libfaketime, from Debian's `{PACKAGE}` package: "
        f"apt-get install {PACKAGE} (scripts/ensure-servers.sh --cluster does, as root); "
        "or run chaos without skew (INVENTORY_CHAOS_SKEW=off)"
    )


def skewed_hosts() -> list[str]:
    return [h.name for h in topology.HOSTS if h.role in SKEWED_ROLES]


def offsets(seed: int) -> dict[str, float]:
    """Each order and stock host's offset in seconds, from the seed: each its own (no two
    equal), between MIN_OFFSET and MAX_OFFSET either way, one decimal, and within each role
    one host ahead and the other behind (order1 ahead, stock1 behind), so the two replicas a
    request may reach disagree by 2 to 4 s."""
    rng = random.Random(seed * 7_919 + 47)
    chosen: dict[str, float] = {}
    for role, first in (("order", 1), ("stock", -1)):
        for i, host in enumerate(topology.by_role(role)):
            sign = first if i % 2 == 0 else -first
            while True:
                value = round(sign * rng.uniform(MIN_OFFSET + 0.1, MAX_OFFSET), 1)
                if value not in chosen.values():
                    break
            chosen[host.name] = value
    return chosen


def spec(offset: float) -> str:
    """FAKETIME's relative spec: "+1.7", "-1.3" (seconds; '.' is the C locale's point,
    which the programs parse it in)."""
    if abs(offset) > MAX_OFFSET:
        raise ValueError(f"offset {offset} s past ±{MAX_OFFSET} s")
    return f"{offset:+.1f}"


def env(offset: float, inherited: dict[str, str] | None = None) -> dict[str, str]:
    """What a program of a host `offset` seconds off runs with (see the module's doc);
    `inherited` (default os.environ) keeps a PYTHONPATH it had, after the site folder."""
    before = (os.environ if inherited is None else inherited).get("PYTHONPATH", "")
    return {
        "LD_PRELOAD": library(),
        "FAKETIME": spec(offset),
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "FAKETIME_FORCE_MONOTONIC_FIX": "0",
        "PYTHONPATH": os.pathsep.join(p for p in (str(SITE), before) if p),
    }
