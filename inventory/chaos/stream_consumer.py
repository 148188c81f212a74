"""The chaos run's consumer of the stock events: what a search index or a storefront cache would
run, reading the Redis Stream through the faults, so I10 judges what a consumer really got.

It reads as a consumer group (XREADGROUP, then XACK), as the README shows, logged in as the
cluster's `events` user (the stream's key, read commands only), through the sentinels: a
Redis failover is a lost connection, after which it asks the sentinels for the primary again
and goes on. The group is made at the stream's end (`$`) before the run seeds its goods, so it
gets every event of the run and none before. An XREADGROUP whose reply was lost (a timeout, a
connection reset, a primary killed after it answered) has moved its entries to this consumer's
pending list all the same, and `>` never gives them again: so at the start and after every
interrupted read it first reads its pending entries (id `0`) until there are none, then goes
on with `>`, as a consumer that must not miss an event does. Whatever the failover did to the
group (the promoted replica may not have had its last reads or acks, or the group at all: then
it is made again from the stream's start), the consumer may get an entry twice or get old ones
again: it keeps them all, in the order received, and the check drops repeats by the event's id
as any consumer must (inventory/check/events.py). Entries of other goods ids (another run's)
are acknowledged and not kept.

A Redis that came back without its data (every node restarted, the machine's last second
lost: docs/ledger.md) would have lost events for good for a consumer of the stream alone. So
after every interruption, at its first read that works again, the consumer also fetches the
run's events from the stock database (`catch_up`: GET /stock-events after the outbox's last id
when it opened, catch_up.py) and keeps those it never received, in id order, before what that
read brought. They are counted apart (`caught_up`): a run whose stream lost nothing has none.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import redis

from shared.redis_client import make_redis

BLOCK_MS = 1000  # one XREADGROUP waits this long for new entries
COUNT = 500  # entries per read
RETRY = 0.5  # seconds after a failed read before the next (a failover takes about 2 s)


@dataclass
class StreamConsumer:
    redis_url: str  # the `events` user's, through the sentinels
    stream: str
    group: str  # one per run
    prefix: str  # the run's goods ids
    name: str = "chaos"
    make_client: Callable[[str], redis.Redis] = make_redis
    entries: list[tuple[str, Mapping[str, str]]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # what interrupted the reads, with when
    regrouped: int = 0  # times the group was gone after a failover and made again
    # The run's events from the stock database after an id (None: the stream alone), the
    # outbox's last id when the consumer opened, and the ids only the catch-up brought.
    catch_up: Callable[[int], Iterable[Mapping[str, str]]] | None = None
    after: int = 0
    caught_up: list[int] = field(default_factory=list)
    _interrupted: bool = False
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _thread: threading.Thread | None = None
    _client: redis.Redis | None = None

    def open(self) -> None:
        """Make the group at the stream's end (and the stream, if it has none yet): every event
        from now on is the group's. Before the run writes anything."""
        self._client = self.make_client(self.redis_url)
        self._client.xgroup_create(self.stream, self.group, id="$", mkstream=True)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._read, name="stock-events", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(BLOCK_MS / 1000 * 5)
        if self._client is not None:
            with contextlib.suppress(redis.RedisError):  # a group left holds only its cursor
                self._client.xgroup_destroy(self.stream, self.group)
            self._client.close()

    def received(self) -> list[tuple[str, Mapping[str, str]]]:
        with self._lock:
            return list(self.entries)

    def ids(self) -> set[int]:
        """The event ids received so far (repeats counted once)."""
        return {int(fields["id"]) for _entry, fields in self.received() if "id" in fields}

    def lost_by_stream(self) -> list[int]:
        """The ids caught up from the stock database that the stream never brought after: what
        Redis lost. A catch-up fetches whatever the outbox has, often before the relays could
        publish it again (Redis was down); those the stream brings later are only repeats."""
        streamed = {int(f["id"]) for e, f in self.received() if not e.startswith("route-")}
        return [i for i in self.caught_up if i not in streamed]

    def wait_for(self, wanted: set[int], timeout: float) -> set[int]:
        """Until every id in `wanted` was received, or `timeout` seconds: the ids still missing."""
        deadline = time.monotonic() + timeout
        while (missing := wanted - self.ids()) and time.monotonic() < deadline:
            time.sleep(0.2)
        return missing

    def _read(self) -> None:
        assert self._client is not None
        started = time.monotonic()
        pending = True  # this consumer's pending entries first: none at the start, but after
        while not self._stop.is_set():
            try:
                answer: Any = self._client.xreadgroup(
                    self.group,
                    self.name,
                    {self.stream: "0" if pending else ">"},
                    count=COUNT,
                    block=None if pending else BLOCK_MS,
                )
            except (redis.AuthenticationError, redis.exceptions.NoPermissionError) as exc:
                self.errors.append(f"{time.monotonic() - started:.1f} s: refused: {exc}")
                return  # not a fault of the run's: said, and no more reads
            except redis.RedisError as exc:
                # NOGROUP: the group is gone; anything else (a lost connection, a primary
                # turned replica unblocking its readers): read again, pending entries first
                self._interrupted = True
                if "NOGROUP" in str(exc):
                    self._regroup(started)
                else:
                    self.errors.append(f"{time.monotonic() - started:.1f} s: {type(exc).__name__}")
                    self._stop.wait(RETRY)
                pending = True
                continue
            batch = [e for _s, entries in answer or [] for e in entries]
            if self._interrupted:
                self._catch_up(started)
            if pending and not batch:
                pending = False  # none left: new entries from here
            self._keep(batch)

    def _keep(self, batch: list[tuple[str, Mapping[str, str] | None]]) -> None:
        if not batch:
            return
        # A pending entry trimmed from the stream since comes back without its fields (None).
        mine = [(e, f) for e, f in batch if f and f.get("goodsId", "").startswith(self.prefix)]
        with self._lock:
            self.entries.extend(mine)
        assert self._client is not None
        # Unacknowledged entries are only pending: this consumer never reads them again.
        with contextlib.suppress(redis.RedisError):
            self._client.xack(self.stream, self.group, *[e for e, _ in batch])

    def _catch_up(self, started: float) -> None:
        """The run's events the stream did not bring, from the stock database; tried again
        after the next interruption if the stock service does not answer now."""
        if self.catch_up is None:
            self._interrupted = False
            return
        try:
            events = list(self.catch_up(self.after))
        except Exception as exc:  # the stock service unreachable: the stream goes on
            self.errors.append(f"{time.monotonic() - started:.1f} s: catch-up: {exc!r}")
            return
        self._interrupted = False
        known = self.ids()
        new = [
            (f"route-{e['id']}", e)
            for e in events
            if e.get("goodsId", "").startswith(self.prefix) and int(e["id"]) not in known
        ]
        with self._lock:
            self.entries.extend(new)
            self.caught_up.extend(int(e["id"]) for _entry, e in new)

    def _regroup(self, started: float) -> None:
        """The promoted replica had no group (made just before the primary died): again, from
        the stream's start, so nothing of the run is skipped (old entries come as repeats)."""
        assert self._client is not None
        if self._stop.is_set():  # stop() destroyed it: not to be made again
            return
        self.regrouped += 1
        self.errors.append(f"{time.monotonic() - started:.1f} s: NOGROUP, made again from 0")
        try:
            self._client.xgroup_create(self.stream, self.group, id="0", mkstream=True)
        except redis.RedisError as exc:  # BUSYGROUP: made meanwhile; else: the next read says
            self.errors.append(f"{time.monotonic() - started:.1f} s: {exc}")
