"""How a reconciler's pass walks its items (settling/reconcile.py, settling/backorders.py,
settling/reservations.py): page after page by a key, each item served alone.

- **Each item alone.** Whatever handling one item raises (a row lock waited out past
  DB_LOCK_TIMEOUT_MS because a paused process holds the row, a statement cut by
  DB_STATEMENT_TIMEOUT_MS, a stock answer it cannot read, a bug) is logged with the item's id,
  counted (reconcile_item_failures_total, by pass and reason), and the pass goes on to the
  next item. Before, one such item ended the whole pass, and the next pass, oldest first, met
  it again: every cancel, expiry, backorder and release behind it waited for ever. The
  skipped item is tried again by the next pass.
- **Pages by a key.** Each page starts after the (time, id) of the previous page's last item,
  whether that item was served or skipped, so a failing item is passed, never restarted at.
- **Each kind alone.** A kind whose listing itself fails (a page read past the statement
  timeout, a row it cannot read) is logged and counted the same way, and the pass goes on to
  the next kind: the reservations' expiries do not wait for the backorders' listing.
- Two failures end the pass instead: Superseded (a newer leader has written: this one must
  stop writing) and the order database unreachable (every item would fail alike; the
  reconciler waits and tries again, settling/reconciler.py). A timeout is one item's, not an outage.

A pass's "now" (its listing cut-offs and deadlines) is the database's clock, read once at its
start (shared/database/clock.py): the hosts' own clocks differ, and the deadlines it compares were
set by the database's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import partial
from typing import TypeVar

from sqlalchemy import Engine, and_, or_, select
from sqlalchemy.exc import SQLAlchemyError

from order_service.storage.store import DB
from order_service.storage.tables import hold_release
from order_service.storage.transitions import Superseded
from shared.database.clock import database_now
from shared.database.engines import DatabaseTimeout, DatabaseUnavailable, transaction
from shared.metrics import PASS_ITEM_FAILURES

log = logging.getLogger(__name__)
Item = TypeVar("Item")
Key = tuple[datetime, str]  # an item's place in its pass: its time, then its id


def serve_pages(
    name: str,
    read: Callable[[Key | None], Sequence[Item]],
    key: Callable[[Item], Key],
    act: Callable[[Item], None],
    page_size: int,
    skipped: list[str],
) -> int:
    """Every page `read` gives (each after the key of the previous page's last item), each
    item served by `act` alone (serve_alone); the ids of the items skipped are added to
    `skipped`. How many pages were read."""
    after: Key | None = None
    pages = 0
    while True:
        page = read(after)
        pages += 1
        for item in page:
            serve_alone(name, key(item)[1], partial(act, item), skipped)
        if len(page) < page_size:
            return pages
        after = key(page[-1])


def serve_alone(name: str, item_id: str, act: Callable[[], object], skipped: list[str]) -> bool:
    """`act` for one item of the pass `name`; False, logged and counted, when it raised (the
    module's docstring: all but the two failures that end the pass)."""
    try:
        act()
    except Superseded:
        raise
    except DatabaseTimeout as exc:
        _skipped(name, item_id, exc.kind, exc, skipped)
        return False
    except DatabaseUnavailable:
        raise
    except Exception as exc:
        reason = "database_error" if isinstance(exc, SQLAlchemyError) else type(exc).__name__
        _skipped(name, item_id, reason, exc, skipped)
        return False
    return True


def serve_kind(name: str, run: Callable[[], object]) -> None:
    """One kind of a pass (all its pages); a failure of its listing is logged and counted
    (item `listing`), and the pass goes on to the next kind."""
    serve_alone(name, "listing", run, [])


def _skipped(name: str, item_id: str, reason: str, exc: Exception, skipped: list[str]) -> None:
    skipped.append(item_id)
    PASS_ITEM_FAILURES.labels(name, reason).inc()
    log.warning(
        "reconcile pass %s: %s skipped (%s), tried again by the next pass: %r",
        name,
        item_id,
        reason,
        exc,
        exc_info=not isinstance(exc, DatabaseTimeout),  # a bug's trace; a timeout says enough
    )


def database_time(engine: Engine) -> datetime:
    """The order database's time now, naive UTC: a pass's "now"."""
    with transaction(engine, DB, read_only=True) as conn:
        return database_now(conn)


def hold_release_page(engine: Engine, before: datetime, after: Key | None, limit: int) -> list[Key]:
    """The next `limit` paid holds whose release the stock service has not acknowledged, paid
    before `before`, oldest first, after the (time, order id) of the previous page's last: a
    release that keeps failing is passed, not read again and again."""
    column, order_id = hold_release.c.created_at, hold_release.c.order_id
    query = select(column, order_id).where(column < before)
    if after is not None:
        stamp, last = after
        query = query.where(or_(column > stamp, and_(column == stamp, order_id > last)))
    query = query.order_by(column, order_id).limit(limit)
    with transaction(engine, DB, read_only=True) as conn:
        return [(row.created_at, row.order_id) for row in conn.execute(query)]
