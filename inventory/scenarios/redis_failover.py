"""`inventory demo redis-failover`: the other half of seed 003's critique. A Redis primary with
one replica, watched by Sentinel. A lock (LOCK_BACKEND=redis's lock, with its fencing counter in
the same Redis) is granted on the primary; the primary dies before the key reaches the replica;
Sentinel promotes the replica, and a second client is granted the same lock: two holders.

The fencing counter's last increment was lost with the primary too; the token is floored at
the server's clock in microseconds (coordination/locks/redis.py), so the second holder still gets a
higher token than the first, and the fence on the stock rows tells them apart: the stale
holder's write is refused. (With a plain counter it got the first one's token again.) Then the
remedy for the double grant itself, in the same setting: REDIS_LOCK_MIN_REPLICAS=1 makes a
grant wait (Redis WAIT) until the replica has the key; with the replica lagging, the grant is
refused instead, and after the failover no second holder appears.

No stack: three redis-server processes of the demo's own (primary, replica, and Sentinel, the
same binary in sentinel mode) in a temporary home.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from pathlib import Path
from typing import Any

import redis
from redis.sentinel import Sentinel
from rich.console import Console

from coordination.locks import LockError
from coordination.locks.redis import FENCE_KEY, RedisLocks
from inventory.local.homes import temporary_home
from inventory.local.servers import ServerProcess, free_port, redis_argv, redis_ready, start_server
from inventory.local.servers import wait_until as wait
from inventory.scenarios.rig import ScenarioResult, Story

MASTER = "inventory"
DOWN_AFTER_MS = 1000


def _start_pair(home: Path, tag: str) -> tuple[ServerProcess, ServerProcess, ServerProcess]:
    folder = home / tag
    folder.mkdir(parents=True)
    ports = [free_port() for _ in range(3)]
    primary = start_server(
        "primary", redis_argv(folder, ports[0]), ports[0], folder, lambda: redis_ready(ports[0]), 20
    )
    replica_argv = [*redis_argv(folder / "r", ports[1]), "--replicaof", "127.0.0.1", str(ports[0])]
    (folder / "r").mkdir()
    replica = start_server(
        "replica", replica_argv, ports[1], folder, lambda: redis_ready(ports[1]), 20
    )
    conf = folder / "sentinel.conf"  # Sentinel rewrites its configuration: a file of its own
    conf.write_text(
        f"port {ports[2]}\nbind 127.0.0.1\ndir {folder}\n"
        f"sentinel monitor {MASTER} 127.0.0.1 {ports[0]} 1\n"
        f"sentinel down-after-milliseconds {MASTER} {DOWN_AFTER_MS}\n"
        f"sentinel failover-timeout {MASTER} 5000\n"
    )
    sentinel = start_server(
        "sentinel",
        ["redis-server", str(conf), "--sentinel"],
        ports[2],
        folder,
        lambda: redis_ready(ports[2]),
        20,
    )
    link = redis.Redis(port=ports[1])
    wait(lambda: link.info("replication").get("master_link_status") == "up", 20, "replication")
    wait(lambda: _master_port(sentinel) == ports[0], 20, "Sentinel watching the primary")
    return primary, replica, sentinel


def _master_port(sentinel: ServerProcess) -> int | None:
    """The primary as a client sees it through Sentinel (which also checks it is not down)."""
    try:
        return int(Sentinel([("127.0.0.1", sentinel.port)]).discover_master(MASTER)[1])
    except redis.RedisError:
        return None


def _locks(sentinel: ServerProcess, min_replicas: int) -> RedisLocks:
    client = Sentinel([("127.0.0.1", sentinel.port)], socket_timeout=0.5).master_for(
        MASTER, socket_timeout=0.5
    )
    return RedisLocks(client, ttl=30, min_replicas=min_replicas)


def _round(story: Story, home: Path, tag: str, min_replicas: int) -> dict[str, Any]:
    primary, replica, sentinel = _start_pair(home, tag)
    name = f"phone-{uuid.uuid4().hex[:6]}"
    try:
        story.show(
            f"primary :{primary.port}, replica :{replica.port}, Sentinel :{sentinel.port} "
            f"(down after {DOWN_AFTER_MS} ms), REDIS_LOCK_MIN_REPLICAS={min_replicas}"
        )
        # The replica lags: stopped, and its link cut by the primary, so nothing written from
        # now on reaches it (stopping it alone is not enough: what the primary sends waits in
        # the replica's socket buffer and is read when it resumes).
        replica.pause()
        redis.Redis(port=primary.port).client_kill_filter(_type="replica")
        alice = _locks(sentinel, min_replicas)
        claim = alice.new_claim([name])
        try:
            held = claim.wait(time.monotonic() + 2.0)
        except LockError as exc:
            held, error = frozenset(), str(exc)
        else:
            error = ""
        token_a = claim.tokens.get(name)
        if held:
            story.show(f"Alice is granted {name} on the primary, token {token_a}")
        else:
            story.show(f"Alice is refused: {error or 'the replica did not confirm the key'}")
        primary.stop()  # killed before the key (and the counter) could replicate
        killed = time.monotonic()
        replica.resume()
        wait(lambda: _master_port(sentinel) == replica.port, 30, "the failover")
        promoted = time.monotonic() - killed
        new_primary = redis.Redis(port=replica.port)
        story.show(
            f"primary killed; Sentinel promoted the replica in {promoted:.1f} s; on it: lock "
            f"key {'present' if new_primary.exists('inventory:lock:' + name) else 'absent'}, "
            f"fence counter {int(new_primary.get(FENCE_KEY) or 0)}"
        )
        bob = _locks(sentinel, 0)
        with bob.hold([name], timeout=3) as lease:
            token_b = lease.tokens[name]
        both = bool(held) and token_b is not None
        story.show(
            f"Bob is granted {name} on the new primary, token {token_b}"
            + (f": two holders at once, tokens {token_a} and {token_b}" if both else "")
        )
        claim.release_all()
        alice.close()  # their watchdog threads
        bob.close()
        return {"two_holders": both, "token_a": token_a, "token_b": token_b, "s": promoted}
    finally:
        for server in (sentinel, replica, primary):
            with contextlib.suppress(ProcessLookupError):  # the primary is already gone
                server.resume()
            server.stop()


def redis_failover(console: Console | None = None) -> ScenarioResult:
    story = Story(console)
    with temporary_home("redis-failover") as home:
        story.step("Without waiting for the replica (the default):")
        plain = _round(story, home, "plain", 0)
        story.step("With REDIS_LOCK_MIN_REPLICAS=1 (a grant waits for the replica: WAIT 1):")
        waited = _round(story, home, "wait", 1)
    a, b = plain["token_a"], plain["token_b"]
    ordered = a is not None and b is not None and b > a
    ok = plain["two_holders"] and ordered and not waited["two_holders"]
    verdict = (
        f"after a failover two clients held one lock at once (tokens {a} and {b}): the key "
        "died with the primary; the counter's increment did too, but the clock floor still "
        "gave the second holder the higher token, so the fence refuses the stale one; "
        "waiting for the replica refused the first grant instead"
    )
    facts = {"plain": plain, "wait": waited}
    return ScenarioResult("redis-failover", ok, verdict if ok else "FAILED: " + verdict, [], facts)
