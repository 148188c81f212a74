"""The relay of stock events: `python -m stock_service.relay [--name NAME]`, one active and
many standby (shared/election.py, as the reconciler), configured by its environment alone.

The leader publishes the outbox rows not sent yet (stock_outbox, written in the commits that
moved the levels: stock_service/entries.py), in id order, to the Redis Stream
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
from typing import Any

import redis
from sqlalchemy import Engine, bindparam, select, update

from shared.db import DatabaseUnavailable, make_engine, transaction, utcnow
from shared.election import Elector, make_elector
from shared.programs import run_singleton
from shared.redis_client import make_redis
from shared.settings import Settings
from stock_service.tables import stock_outbox

log = logging.getLogger("relay")
ELECTION_PATH = "/inventory/relay"
PAGE = 500  # rows published per round trip
IDLE = 0.2  # seconds between looks at an empty outbox
REPLICA_WAIT_MS = 1000  # how long a round waits for the replicas to take its events
REPLICA_PROBE_MS = 100  # how long the look before a round waits for the replicas to be there
BACKOFF = 1.0  # seconds after a failed round (Redis or the database down, no replica)
DB = "stock database"

UNSENT = (
    select(stock_outbox)
    .where(stock_outbox.c.sent_at.is_(None))
    .order_by(stock_outbox.c.id)
    .limit(bindparam("limit"))
)
MARK_SENT = (
    update(stock_outbox)
    .where(stock_outbox.c.id.in_(bindparam("ids", expanding=True)))
    .values(sent_at=bindparam("at"))
)


def event_fields(row: Any) -> dict[str, str]:
    """One outbox row as a stream entry (every value a string; the schema is
    stock_service/ledger_schemas.py's StockEvent)."""
    return {
        "id": str(row.id),
        "goodsId": row.goods_id,
        "seq": str(row.seq),
        "kind": row.kind,
        "delta": str(row.delta),
        "level": str(row.level),
        "flag": row.flag or "",
        "reason": row.reason or "",
        "time": row.created_at.isoformat(),
    }


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
    """Campaign, publish while leading and sure of it, resign, campaign again; until `stop`."""
    engine = make_engine(settings.stock_database_url, application="relay")
    client = make_redis(settings.redis_url)
    elector = make_elector(settings, ELECTION_PATH, identifier)
    log.info("%s campaigning at=%.3f", identifier, time.time())
    try:
        while not stop.is_set():
            token = elector.campaign(stop)
            if token is None:
                break
            log.warning("%s elected token=%d at=%.3f", identifier, token, time.time())
            lead(settings, identifier, elector, engine, client, stop)
            elector.resign()
    finally:
        elector.close()
        log.warning("%s resigned at=%.3f", identifier, time.time())
        client.close()
        engine.dispose()


def lead(
    settings: Settings,
    identifier: str,
    elector: Elector,
    engine: Engine,
    client: redis.Redis,
    stop: threading.Event,
) -> None:
    """Publish until the outbox is empty, look again every IDLE seconds; a failure (Redis or
    the database down) is logged and tried again, the rows still unsent."""
    stream, maxlen = settings.stock_events_stream, settings.stock_events_maxlen
    replicas = settings.stock_events_min_replicas
    while not stop.is_set():
        if not elector.is_leader():
            log.warning("%s not the leader any more at=%.3f", identifier, time.time())
            return
        try:
            sent = publish_pending(engine, client, stream, maxlen, min_replicas=replicas)
        except redis.ResponseError as exc:  # e.g. WAIT on a demoted primary, now a replica
            log.warning("%s round failed at=%.3f: %s", identifier, time.time(), exc)
            client.connection_pool.disconnect()
            stop.wait(BACKOFF)
            continue
        except (redis.RedisError, DatabaseUnavailable) as exc:
            log.warning("%s round failed at=%.3f: %s", identifier, time.time(), exc)
            stop.wait(BACKOFF)
            continue
        if sent:
            log.info("%s published %d events at=%.3f", identifier, sent, time.time())
        else:
            stop.wait(IDLE)


def main(argv: list[str] | None = None) -> int:
    return run_singleton("relay", serve, argv)


if __name__ == "__main__":
    sys.exit(main())
