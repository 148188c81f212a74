"""I10 on a stack: wait until the relay has sent the scope's outbox, then read the outbox and
stock rows of a goods prefix from the stock database and the stream from Redis (XRANGE), and
check them (events.py).

The scope is the goods ids of the prefix, as for I1-I9, and all their outbox rows, sent or not:
the check first waits (up to `wait` seconds) until none is unsent, since a row the relay has
not sent yet is missing from the stream for a reason that is no fault; one still unsent after
the wait is a violation named in the result (is a relay running?). The stock database is read
before the stream, so a quiet scope is needed, as for the other checks: an order of the prefix
during the check makes a row the stream does not have yet.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from typing import Any

import redis
from sqlalchemy import Engine, func, select

from inventory.check.events import NAME, OutboxRow, check_events
from inventory.check.result import CheckResult
from inventory.local.stack_state import StackState
from shared.config.settings import Settings
from shared.database.engines import make_engine
from shared.redis_client import make_redis
from stock_service.storage.tables import stock, stock_outbox

WAIT = 30.0  # seconds the relay gets to send the scope's rows (it looks every 0.2 s)
PAGE = 1000  # stream entries per XRANGE


def run_events_check(
    stock_url: str, redis_url: str, stream: str, goods_prefix: str = "", wait: float = WAIT
) -> CheckResult:
    engine = make_engine(stock_url)
    client = make_redis(redis_url)
    try:
        waited, unsent = wait_until_sent(engine, goods_prefix, wait)
        rows, levels = read_outbox(engine, goods_prefix)
        entries = list(read_stream(client, stream, goods_prefix))
    except redis.RedisError as exc:
        # The stream could not be read: I10 cannot hold, and says why (the other checks stand).
        return CheckResult("I10", NAME, False, f"stream {stream} unreadable: {exc}")
    finally:
        client.close()
        engine.dispose()
    result = check_events(rows, entries, levels)
    if unsent:
        result.detail = f"{unsent} rows still unsent after {waited:.0f} s (a relay?); " + (
            result.detail
        )
    return result


def unsent_rows(engine: Engine, goods_prefix: str) -> int:
    query = (
        select(func.count())
        .select_from(stock_outbox)
        .where(stock_outbox.c.goods_id.like(f"{goods_prefix}%"), stock_outbox.c.sent_at.is_(None))
    )
    with engine.connect() as conn:
        return int(conn.execute(query).scalar_one())


def wait_until_sent(engine: Engine, goods_prefix: str, wait: float) -> tuple[float, int]:
    """Watch (never publish) until the scope has no unsent row, or `wait` seconds passed: how
    long it took, and how many are left."""
    started = time.monotonic()
    while (left := unsent_rows(engine, goods_prefix)) and time.monotonic() - started < wait:
        time.sleep(0.2)
    return time.monotonic() - started, left


def read_outbox(
    engine: Engine, goods_prefix: str
) -> tuple[list[OutboxRow], dict[str, tuple[int, int]]]:
    """The scope's outbox rows and its goods ids' (level, last ledger seq), in one transaction.
    LIKE takes `_` and `%` as wildcards: the rows are filtered again by the plain prefix, as
    the stream's entries are."""
    like = f"{goods_prefix}%"
    o = stock_outbox.c
    with engine.begin() as conn:
        rows = [
            OutboxRow(r.id, r.goods_id, r.seq, r.kind, r.delta, r.level, r.sent_at is not None)
            for r in conn.execute(select(stock_outbox).where(o.goods_id.like(like)).order_by(o.id))
            if r.goods_id.startswith(goods_prefix)
        ]
        levels = {
            r.goods_id: (int(r.num), int(r.ledger_seq))
            for r in conn.execute(
                select(stock.c.goods_id, stock.c.num, stock.c.ledger_seq).where(
                    stock.c.goods_id.like(like)
                )
            )
            if r.goods_id.startswith(goods_prefix)
        }
    return rows, levels


def read_stream(
    client: redis.Redis, stream: str, goods_prefix: str = "", page_size: int = PAGE
) -> Iterator[tuple[str, Mapping[str, str]]]:
    """The stream's entries of the scope's goods ids, oldest first, a page per XRANGE (the
    exclusive `(id` start needs Redis 6.2). The client decodes (make_redis): all str."""
    start = "-"
    while True:
        page: Any = client.xrange(stream, min=start, max="+", count=page_size)
        for entry_id, fields in page:
            if fields.get("goodsId", "").startswith(goods_prefix):
                yield entry_id, fields
        if len(page) < page_size:
            return
        start = f"({page[-1][0]}"


def relays_of(state: StackState) -> int:
    """How many relays the stack's `up` started (relay1, relay2 ...): I10 is checked on a
    stack that runs them; without one the stream is not the outbox's business."""
    return sum(1 for name in state.pids if name.startswith("relay"))


def check_stack_events(
    state: StackState, goods_prefix: str = "", wait: float = WAIT
) -> CheckResult:
    """I10 on a stack `inventory up` recorded: its stock database and its Redis; the stream's
    name is the services' (STOCK_EVENTS_STREAM of this environment, as `up` passed it on)."""
    settings = Settings.from_env({**os.environ, **state.env()})
    return run_events_check(
        state.stock_database_url,
        state.redis_url,
        settings.stock_events_stream,
        goods_prefix,
        wait,
    )
