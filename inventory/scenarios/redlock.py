"""`inventory demo redlock`: Kleppmann's critique of RedLock (seed 003) made to happen, on a
stack with LOCK_BACKEND=redlock and its three Redis servers. A holder granted the lock on all
three is stopped past the grant's validity; the keys expire on every server, the next buyer
is granted the same name, and both hold it at once. RedLock cannot prevent that (no lock with
a lease can); the fencing token at the stock row refuses the stale write, and with --unfenced
the unit sells twice.
"""

from __future__ import annotations

import time

import redis
from rich.console import Console

from inventory.local import stack_state
from inventory.scenarios.overlap import overlap_shown, slow_holder
from inventory.scenarios.rig import Rig, ScenarioResult, Story

TTL = 2.0
ENV = {"LOCK_BACKEND": "redlock", "REDLOCK_TTL": str(TTL)}
KEY = "inventory:redlock:lock:{goods}"  # coordination/locks/redlock.py's key of a name


class _Keys:
    """What the story shows of RedLock: the lock's key on each server, with its time to live."""

    lease = f"grant on every server (REDLOCK_TTL={TTL:.0f})"

    def __init__(self) -> None:
        self.servers: list[redis.Redis] = []

    def _ttls(self, state: stack_state.StackState, goods: str) -> list[int]:
        if not self.servers:
            self.servers = [redis.Redis.from_url(url) for url in state.redlock_urls.split(",")]
        return [int(server.pttl(KEY.format(goods=goods))) for server in self.servers]

    def _lines(self, state: stack_state.StackState, goods: str) -> list[str]:
        ttls = self._ttls(state, goods)
        if all(ttl < 0 for ttl in ttls):
            return []
        shown = ", ".join(
            f"server {i}: {'expires in ' + format(t / 1000, '.1f') + ' s' if t >= 0 else 'no key'}"
            for i, t in enumerate(ttls)
        )
        return [f"{KEY.format(goods=goods)} ({shown})"]

    def held(self, rig: Rig) -> list[str]:
        return self._lines(rig.state, rig.goods)

    def expired(self, rig: Rig) -> bool:
        return all(ttl < 0 for ttl in self._ttls(rig.state, rig.goods))

    def after(self, rig: Rig) -> list[str]:
        lines = self._lines(rig.state, rig.goods)
        for server in self.servers:
            server.close()
        return lines


def redlock(console: Console | None = None, unfenced: bool = False) -> ScenarioResult:
    story = Story(console)
    story.step(
        f"LOCK_BACKEND=redlock on three independent Redis servers, REDLOCK_TTL={TTL:.0f}: a "
        "name is held when a majority granted it, for the TTL minus the time that took."
    )
    started = time.monotonic()
    slow = slow_holder(story, "redlock", ENV, unfenced, _Keys())
    took = time.monotonic() - started
    ok = overlap_shown(slow, unfenced)
    if unfenced:
        verdict = (
            f"two holders at once: the one paused past its validity sold the last unit "
            f"after the next holder did ({slow['flows']} flows for 1 unit)"
        )
    else:
        verdict = (
            "two holders at once (the first paused past its validity); the fencing token "
            "refused the stale holder's write: 1 unit, 1 flow"
        )
    return ScenarioResult(
        "redlock" + (" (unfenced)" if unfenced else ""),
        ok,
        verdict if ok else "FAILED: " + verdict,
        slow["checks"],
        {"flows": slow["flows"], "level": slow["level"], "refused": slow["refused"], "s": took},
    )
