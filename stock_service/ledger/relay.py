"""The relay of stock events: `python -m stock_service.ledger.relay [--name NAME]`, one active and
many standby (coordination/election.py, as the reconciler), configured by its environment alone.

The leader publishes the outbox rows not sent yet (stock_outbox, written in the commits that
moved the levels: stock_service/core/ledger_lines.py), in id order, to the Redis Stream
STOCK_EVENTS_STREAM (one XADD each, capped near STOCK_EVENTS_MAXLEN entries, in one pipeline),
then marks them sent. Delivery is at least once: a relay that dies or is deposed between the
XADDs and the mark sends them again (after a failover, its successor does). Per goods id the
stream keeps the ledger's order: a goods id's rows are written under its lock one commit after
another, so their ids grow with the ledger, and each relay sends in id order, so the first
copy of each event comes in ledger order whatever the repeats. A consumer drops repeats by the
event's `id` (README: a consumer group in a few lines).

Redis replicates asynchronously: an event the primary took just before it died may be missing
on the replica the sentinels promote. With STOCK_EVENTS_MIN_REPLICAS set (the cluster: 1), a
round's XADDs are followed by WAIT on the same connection, and the rows are marked sent only
once that many replicas have them; otherwise the round counts as failed and is sent again
(repeats, never a loss, as long as the sentinels promote only replicas counted: set it to the
number of replicas). While the primary has no replica (the seconds after a failover, until the
old primary rejoins as one) the events wait in the outbox: each round first asks (WAIT with a
short timeout on the pool's next connection, the last round's: it counts the replicas that have
that round's writes, so after a failed round it says none until one has caught up) and sends
nothing while too few are there, rather than sending the same rows again every second (a quick
chaos run's Redis failover made 3,354 repeats of 6,203 events that way). A connection left on
a primary the sentinels demoted answers WAIT with an error: the pool is dropped, so the next
round asks the sentinels again.
"""

from __future__ import annotations

import logging
import sys
import threading
import time

import redis
from sqlalchemy import Engine

from coordination.election import Elector, make_elector, serve_elected
from shared.config.settings import Settings
from shared.database.engines import DatabaseTimeouts, make_engine, transaction, utcnow
from shared.programs import run_singleton
from shared.redis_client import make_redis
from stock_service.ledger.outbox import DB, MARK_SENT, UNSENT, event_fields

log = logging.getLogger("relay")
ELECTION_PATH = "/inventory/relay"
PAGE = 500  # rows published per round trip
REPLICA_WAIT_MS = 1000  # how long a round waits for the replicas to take its events
REPLICA_PROBE_MS = 100  # how long the look before a round waits for the replicas to be there
BACKOFF = 1.0  # seconds after a failed round (Redis or the database down, no replica) ...
MAX_BACKOFF = 8.0  # ... doubled at each failure in a row up to this, so a lasting fault is
# not hammered and its log not flooded, and a failover's few seconds cost at most one wait


class NotReplicated(redis.RedisError):
    """The stream's primary took a round's events, but not as many replicas as asked within
    REPLICA_WAIT_MS: the rows stay unsent, and the next round sends them again."""


def publish_pending(
    engine: Engine,
    client: redis.Redis,
    stream: str,
    maxlen: int,
    limit: int = PAGE,
    min_replicas: int = 0,
) -> int:
    """One round: the oldest unsent rows to the stream (and, with `min_replicas`, to that many
    replicas), then marked sent. How many."""
    with transaction(engine, DB, read_only=True) as conn:
        rows = list(conn.execute(UNSENT, {"limit": limit}))
    if not rows:
        return 0
    if min_replicas and (there := client.wait(min_replicas, REPLICA_PROBE_MS)) < min_replicas:
        raise NotReplicated(f"{len(rows)} events wait: {there} of {min_replicas} replicas there")
    # One pipeline is one connection: WAIT counts the replicas that have this connection's
    # writes, i.e. these XADDs.
    pipe = client.pipeline(transaction=False)
    for row in rows:
        pipe.xadd(stream, event_fields(row), maxlen=maxlen, approximate=True)  # type: ignore[arg-type]
    if min_replicas:
        pipe.wait(min_replicas, REPLICA_WAIT_MS)
    answers = pipe.execute()
    if min_replicas and answers[-1] < min_replicas:
        raise NotReplicated(
            f"{len(rows)} events on the primary, {answers[-1]} of {min_replicas} replicas had "
            f"them after {REPLICA_WAIT_MS} ms"
        )
    with transaction(engine, DB) as conn:
        conn.execute(MARK_SENT, {"ids": [row.id for row in rows], "at": utcnow()})
    return len(rows)


def serve(settings: Settings, identifier: str, stop: threading.Event) -> None:
    """Campaign, publish while leading and sure of it, resign, campaign again; until `stop`
    (coordination/election.py's serve_elected: whatever fails is logged, waited out and tried
    again, so the outbox never fills with no one to send it)."""
    engine = make_engine(
        settings.stock_database_url, application="relay", timeouts=DatabaseTimeouts.of(settings)
    )
    client = make_redis(settings.redis_url)
    elector = make_elector(settings, ELECTION_PATH, identifier)
    try:
        serve_elected(
            elector,
            identifier,
            stop,
            lambda _token: lead(settings, identifier, elector, engine, client, stop),
            backoff,
            log,
        )
    finally:
        client.close()
        engine.dispose()


def backoff(failures: int) -> float:
    """Seconds to wait after `failures` failed rounds in a row."""
    return float(min(BACKOFF * 2 ** max(failures - 1, 0), MAX_BACKOFF))


def lead(
    settings: Settings,
    identifier: str,
    elector: Elector,
    engine: Engine,
    client: redis.Redis,
    stop: threading.Event,
) -> None:
    """Publish until the outbox is empty, look again every STOCK_EVENTS_POLL seconds. A round
    that fails, whatever the error (Redis or the database down; a read-only transaction on a
    database just demoted; a statement or lock wait timeout; anything else) is logged and
    tried again after a back-off, its rows still unsent: nothing is marked sent that did not
    reach the stream, so trying again can only repeat an event, never lose one."""
    stream, maxlen = settings.stock_events_stream, settings.stock_events_maxlen
    replicas = settings.stock_events_min_replicas
    failures = 0
    while not stop.is_set():
        if not elector.is_leader():
            log.warning("%s not the leader any more at=%.3f", identifier, time.time())
            return
        try:
            sent = publish_pending(engine, client, stream, maxlen, min_replicas=replicas)
        except Exception as exc:
            failures += 1
            log.warning("%s round failed at=%.3f: %r", identifier, time.time(), exc)
            forget_connections(exc, engine, client)
            stop.wait(backoff(failures))
            continue
        failures = 0
        if sent:
            log.info("%s published %d events at=%.3f", identifier, sent, time.time())
        else:
            stop.wait(settings.stock_events_poll)


def forget_connections(exc: Exception, engine: Engine, client: redis.Redis) -> None:
    """After a failed round, the next one starts on new connections where the old ones may
    point at the wrong server: a Redis primary the sentinels demoted (WAIT answers an error),
    a database primary demoted behind the same address (a read-only transaction). A Redis
    connection error is left to redis-py, which reconnects (through the sentinels) itself."""
    if isinstance(exc, redis.ResponseError):
        client.connection_pool.disconnect()
    elif not isinstance(exc, redis.RedisError):
        engine.dispose()


def main(argv: list[str] | None = None) -> int:
    return run_singleton("relay", serve, argv)


if __name__ == "__main__":
    sys.exit(main())
