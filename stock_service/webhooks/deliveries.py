"""The deliverer's rows: the outbox fanned out to each subscription, the deliveries due taken
(claimed), and each attempt's outcome recorded. Every step is one short transaction on the
stock database, so a deliverer that dies loses nothing: a claim lapses and is taken again.

Fan-out. Each subscription keeps a cursor over stock_outbox (`fanned_to`): the rows above it
are read in id order, those it wants become delivery rows, and the cursor moves, in one
transaction. Ids are handed out when a row is inserted, not when it commits, so a row can
commit after one with a higher id was read (two goods ids' commits racing; never two of one
goods id, which are written one lock hold after another). The cursor therefore stops before a
hole in the ids while the rows after it are younger than GAP_GRACE (a rolled-back insert's id
never commits; a paused writer's commits late): the rows past it are fanned out meanwhile
(FanOut.read_to), each pair once (the primary key, and a look before inserting), and the
rows from the cursor on are walked again each pass until the hole fills or grows old. A row
read past before it committed is picked up as soon as a later row of its goods id is read
(`_missed`), so it still goes first.

Order. Per (subscription, goods id) only the pending delivery with the lowest event id is
due, so a goods id's events arrive in seq order; a retry holds back that goods id's later
events, not the others'. A dead event frees the line for the next. A replayed one is pending
again and, being the lowest, goes first, maybe after later events already delivered (its seq
says where it belongs).

Claims. A due row is claimed by moving its next attempt past the attempt's longest time
(CLAIM_SECONDS): a deliverer deposed or killed mid-POST leaves a row that is due again once
that passes, and the event is sent again (at least once). The claim is an UPDATE that must
find the row as it was read, so two deliverers (one deposed and not yet aware) never both
take one.

Runs. With a head claimed, the next pending events of its line (due too, up to RUN in all)
are claimed with it, in the same transaction, and one worker sends them in order, stopping at
the first failure: the rest are let go when the outcomes are recorded (record_all, one
transaction for every run finished in a round), and wait behind the failed one as before.

One piece: the fan-out, the claims and the records read and write the same rows by the same
rules (a line's head, a claim's time, what pending means), and each step's guarantee leans on
the others' (a claim lets go only what a record sees); apart, a rule would be kept in two
places."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from prometheus_client import Counter
from sqlalchemy import (
    Connection,
    Engine,
    and_,
    delete,
    exists,
    func,
    insert,
    or_,
    select,
    update,
)

from shared.database.clock import database_now
from shared.database.engines import transaction
from stock_service.ledger import event_fields
from stock_service.storage import stock_outbox, webhook_delivery, webhook_subscription
from stock_service.webhooks.subscriptions import DEAD, DELIVERED, PENDING

log = logging.getLogger("webhooks")
DB = "stock database"
ELECTION_PATH = "/inventory/webhooks"  # where the deliverers elect the one that delivers
PAGE = 500  # outbox rows fanned out per subscription and transaction
GAP_GRACE = timedelta(seconds=60)  # a hole in the ids older than this is a rolled-back insert
KEEP_DELIVERED = timedelta(days=1)  # delivered rows are kept this long, then pruned
ERROR = 200  # last_error's column
s, d, o = webhook_subscription.c, webhook_delivery.c, stock_outbox.c
# Here, not in deliverer.py: `python -m` runs that module a second time as __main__, and a
# metric made twice is refused by prometheus_client's registry.
DELIVERIES = Counter(
    "webhook_deliveries_total",
    "Webhook delivery attempts, by outcome (delivered, retried, dead)",
    ["outcome"],
)
DEAD_LETTERS = Counter("webhook_dead_letters_total", "Webhook events given up (dead letters)")


@dataclass(frozen=True)
class Due:
    """One claimed delivery: what to send, where, signed with what."""

    subscription_id: str
    event_id: int
    goods_id: str
    seq: int
    url: str
    secret: str
    event: dict[str, str]  # as GET /stock-events answers it
    attempts: int  # before this one

    @property
    def key(self) -> tuple[str, int]:
        return self.subscription_id, self.event_id


@dataclass(frozen=True)
class _Event:
    """An outbox row's fields, as event_fields reads them."""

    id: int
    goods_id: str
    seq: int
    kind: str
    delta: int
    level: int
    flag: str | None
    reason: str | None
    location: str | None
    created_at: datetime


class FanOut:
    """The fan-out of a leader's term. `read_to` (in memory: lost with the term, and then
    `fanned_to` again) is how far each subscription's new rows were read: while the cursor
    waits at a young hole, the rows past it go on being fanned out from there, and the rows
    from the cursor on are walked a page at a time, to fan out a late commit and move the
    cursor over what is settled."""

    def __init__(self, page: int = PAGE) -> None:
        self.page = page
        self.read_to: dict[str, int] = {}

    def __call__(self, engine: Engine) -> int:
        """Every subscription's new outbox rows made its delivery rows: how many were made.
        One subscription's failure is logged and the others go on."""
        with transaction(engine, DB, read_only=True) as conn:
            subscriptions = list(conn.execute(select(s.id, s.kinds, s.goods_ids, s.fanned_to)))
        made = 0
        for sub in subscriptions:
            try:
                made += self.one(engine, sub)
            except Exception as exc:
                log.warning("fan-out to subscription %s failed: %r", sub.id, exc)
        return made

    def one(self, engine: Engine, sub: Any) -> int:
        kinds = set(sub.kinds.split(",")) if sub.kinds else None
        goods = set(sub.goods_ids.split(",")) if sub.goods_ids else None
        cursor = int(sub.fanned_to)
        ahead = max(cursor, self.read_to.get(sub.id, cursor))
        columns = (o.id, o.goods_id, o.seq, o.kind, o.created_at)
        with transaction(engine, DB) as conn:
            now = database_now(conn)
            walked = list(
                conn.execute(select(*columns).where(o.id > cursor).order_by(o.id).limit(self.page))
            )
            beyond = []
            if ahead > cursor:
                beyond = list(
                    conn.execute(
                        select(*columns).where(o.id > ahead).order_by(o.id).limit(self.page)
                    )
                )
            rows = {int(r.id): r for r in [*walked, *beyond]}
            if not rows:
                return 0
            rows.update(_missed(conn, rows, cursor, ahead, goods))
            for row in walked:
                if int(row.id) != cursor + 1 and now - row.created_at < GAP_GRACE:
                    break  # a lower id may still commit: walk from here again
                cursor = int(row.id)
            new = _new_deliveries(conn, sub.id, rows, kinds, goods, now)
            if new:
                conn.execute(insert(webhook_delivery), new)
            if cursor != sub.fanned_to:
                # Moved only from where it was read: a second deliverer's fan-out (one deposed
                # and not yet aware) finds it moved and rolls back (its inserts are repeats).
                moved = conn.execute(
                    update(webhook_subscription)
                    .where(s.id == sub.id, s.fanned_to == sub.fanned_to)
                    .values(fanned_to=cursor)
                )
                if not moved.rowcount:
                    raise Overtaken(f"subscription {sub.id}'s cursor moved under this fan-out")
        self.read_to[sub.id] = max(cursor, ahead, max(rows))
        return len(new)


def _missed(
    conn: Connection, rows: dict[int, Any], cursor: int, ahead: int, goods: set[str] | None
) -> dict[int, Any]:
    """The rows of the goods ids first read in this pass (above `ahead`) that lie between the
    cursor and `ahead`, where an earlier pass read past them before they committed: an id is
    taken at insert, and another goods id's commit can come first. A goods id's rows commit in
    id order (one lock hold after another), so once one of its rows is seen, every earlier one
    is there to read: made delivery rows now, they go before it (the line's lowest event id
    first). Else a row read past while uncommitted waits for the cursor's walk and arrives
    after its goods id's later events (a quick chaos run: 23 of 8,196 out of seq order)."""
    first_read = {r.goods_id for i, r in rows.items() if i > ahead}
    if goods is not None:
        first_read &= goods
    if not first_read or ahead <= cursor:
        return {}
    found = conn.execute(
        select(o.id, o.goods_id, o.seq, o.kind, o.created_at).where(
            o.goods_id.in_(sorted(first_read)), o.id > cursor, o.id <= ahead
        )
    )
    return {int(r.id): r for r in found if int(r.id) not in rows}


def _new_deliveries(
    conn: Connection,
    subscription_id: str,
    rows: dict[int, Any],
    kinds: set[str] | None,
    goods: set[str] | None,
    now: datetime,
) -> list[dict[str, Any]]:
    """The delivery rows of the outbox rows the subscription wants and has none of yet."""
    wanted = [
        r
        for r in rows.values()
        if (kinds is None or r.kind in kinds) and (goods is None or r.goods_id in goods)
    ]
    if not wanted:
        return []
    there = set(
        conn.execute(
            select(d.event_id).where(
                d.subscription_id == subscription_id,
                d.event_id.in_([int(r.id) for r in wanted]),
            )
        ).scalars()
    )
    return [
        {
            "subscription_id": subscription_id,
            "event_id": int(r.id),
            "goods_id": r.goods_id,
            "seq": int(r.seq),
            "kind": r.kind,
            "state": PENDING,
            "attempts": 0,
            "next_attempt_at": now,
        }
        for r in sorted(wanted, key=lambda r: int(r.id))
        if int(r.id) not in there
    ]


class Overtaken(Exception):
    """Another deliverer moved a cursor this one read: this fan-out is rolled back."""


RUN = 20  # a goods id's consecutive due events claimed together, sent by one worker in order


def claim_due(
    engine: Engine,
    limit: int,
    claim_seconds: float,
    in_flight: Mapping[str, int],
    per_subscription: int,
    run: int = RUN,
) -> list[list[Due]]:
    """Up to `limit` runs of due deliveries, claimed for `claim_seconds`, in one transaction:
    each run the first pending of a goods id (its next attempt come) and up to `run` - 1 of
    its next pending ones (due too), to be sent in order by one worker, at most
    `per_subscription` runs of one subscription in flight (`in_flight`: those it has
    already): one slow receiver never takes every worker."""
    if limit <= 0:
        return []
    # The head of each line: its lowest pending event id (the index on state, subscription,
    # goods id, event id serves it), due or not; only due heads are taken.
    heads = (
        select(
            d.subscription_id.label("sub"),
            func.min(d.event_id).label("head"),
        )
        .where(d.state == PENDING)
        .group_by(d.subscription_id, d.goods_id)
        .subquery()
    )
    taken: list[list[Due]] = []
    counts = dict(in_flight)
    with transaction(engine, DB) as conn:
        now = database_now(conn)
        rows = list(
            conn.execute(
                select(*DUE_COLUMNS)
                .select_from(heads)
                .join(
                    webhook_delivery,
                    (d.subscription_id == heads.c.sub) & (d.event_id == heads.c.head),
                )
                .join(webhook_subscription, s.id == d.subscription_id)
                .join(stock_outbox, o.id == d.event_id)
                # A head is pending (read in this statement): no state here, so the join takes
                # the primary key, not a walk of every pending entry of the line index per head
                # (a claim took 100s of ms on PostgreSQL that way, its updates piling entries).
                .where(d.next_attempt_at <= now)
                .order_by(d.next_attempt_at, d.event_id)
                .limit(limit * 4)
            )
        )
        until = now + timedelta(seconds=claim_seconds)
        for row in rows:
            if len(taken) >= limit or counts.get(row.subscription_id, 0) >= per_subscription:
                continue
            claimed = conn.execute(
                update(webhook_delivery)
                .where(
                    d.subscription_id == row.subscription_id,
                    d.event_id == row.event_id,
                    d.state == PENDING,
                    d.next_attempt_at == row.next_attempt_at,
                )
                .values(
                    next_attempt_at=until,
                    first_tried_at=func.coalesce(d.first_tried_at, now),
                )
            )
            if not claimed.rowcount:
                continue
            counts[row.subscription_id] = counts.get(row.subscription_id, 0) + 1
            taken.append([_due(row)])
        if run > 1 and taken:
            _lengthen(conn, taken, run, now, until)
    return taken


def _lengthen(
    conn: Connection, runs: list[list[Due]], run: int, now: datetime, until: datetime
) -> None:
    """Each claimed head followed by its line's next pending events, due too (up to `run` in
    all), claimed with it. One read for every line (the line index), one UPDATE per run: the
    head's claim is what keeps another deliverer off its line (only heads are claimed)."""
    lines = {(r[0].subscription_id, r[0].goods_id): r for r in runs}
    # Each line's next pending ones numbered (a window over the line index), so a line with
    # thousands pending gives `run` - 1 of them, not every line's room.
    behind = (
        select(
            d.subscription_id.label("sub"),
            d.event_id.label("event"),
            func.row_number()
            .over(partition_by=(d.subscription_id, d.goods_id), order_by=d.event_id)
            .label("n"),
        )
        .where(
            d.state == PENDING,
            or_(
                *(
                    and_(
                        d.subscription_id == r[0].subscription_id,
                        d.goods_id == r[0].goods_id,
                        d.event_id > r[0].event_id,
                    )
                    for r in runs
                )
            ),
        )
        .subquery()
    )
    rows = conn.execute(
        select(*DUE_COLUMNS)
        .select_from(behind)
        .join(
            webhook_delivery,
            (d.subscription_id == behind.c.sub) & (d.event_id == behind.c.event),
        )
        .join(webhook_subscription, s.id == d.subscription_id)
        .join(stock_outbox, o.id == d.event_id)
        .where(behind.c.n < run)
        .order_by(d.subscription_id, d.goods_id, d.event_id)
    )
    stopped: set[tuple[str, str]] = set()
    for row in rows:
        line = (row.subscription_id, row.goods_id)
        found = lines[line]
        if line in stopped or len(found) >= run:
            continue
        if row.next_attempt_at > now:  # waiting out a retry (a replayed head before it)
            stopped.add(line)
            continue
        found.append(_due(row))
    for found in runs:
        if len(found) > 1:
            conn.execute(
                update(webhook_delivery)
                .where(
                    d.subscription_id == found[0].subscription_id,
                    d.event_id.in_([due.event_id for due in found[1:]]),
                    d.state == PENDING,
                )
                .values(next_attempt_at=until)
            )


def _due(row: Any) -> Due:
    event = _Event(
        int(row.event_id),
        row.goods_id,
        int(row.seq),
        row.kind,
        int(row.delta),
        int(row.level),
        row.flag,
        row.reason,
        row.location,
        row.created_at,
    )
    return Due(
        row.subscription_id,
        int(row.event_id),
        row.goods_id,
        int(row.seq),
        row.url,
        row.secret,
        event_fields(event),
        int(row.attempts),
    )


DUE_COLUMNS = (
    d.subscription_id,
    d.event_id,
    d.goods_id,
    d.seq,
    d.kind,
    d.attempts,
    d.next_attempt_at,
    s.url,
    s.secret,
    o.delta,
    o.level,
    o.flag,
    o.reason,
    o.location,
    o.created_at,
)


@dataclass(frozen=True)
class Outcome:
    """What one attempt came to: delivered, or an error and whether another try may help."""

    error: str | None = None  # None: delivered (a 2xx)
    retry: bool = True  # False: a 4xx other than 408 and 429, a refused redirect


@dataclass(frozen=True)
class Retries:
    """WEBHOOK_MAX_ATTEMPTS, WEBHOOK_MAX_AGE_SECONDS, WEBHOOK_BACKOFF_SECONDS and its cap."""

    max_attempts: int
    max_age: float
    base: float
    cap: float

    def delay(self, attempts: int, rng: Callable[[], float] = random.random) -> float:
        """Full jitter: anywhere from 0 to min(cap, base * 2^(attempts-1)) after the
        `attempts`-th failure, so receivers coming back are not met by every retry at once."""
        return rng() * min(self.cap, self.base * 2 ** max(attempts - 1, 0))


def record(engine: Engine, due: Due, outcome: Outcome, retries: Retries) -> str | None:
    """One attempt's outcome written (record_all of one)."""
    return record_all(engine, [(due, outcome)], [], retries).get(due.key)


def record_all(
    engine: Engine,
    outcomes: Sequence[tuple[Due, Outcome]],
    unsent: Sequence[Due],
    retries: Retries,
) -> dict[tuple[str, int], str]:
    """The attempts' outcomes written, in one transaction, and the claims of `unsent` (the
    rest of a run stopped by a failure) let go, so they are due again as soon as their turn
    comes: the state each delivery is in now (delivered, pending again, dead), none for one
    no longer pending (deleted with its subscription, or taken by another deliverer after
    this one's claim lapsed)."""
    states: dict[tuple[str, int], str] = {}
    if not outcomes and not unsent:
        return states
    with transaction(engine, DB) as conn:
        now = database_now(conn)
        pending: dict[tuple[str, int], Any] = {}
        for sub, ids in _by_subscription(due for due, _ in outcomes).items():
            for row in conn.execute(
                select(d.subscription_id, d.event_id, d.attempts, d.first_tried_at).where(
                    d.subscription_id == sub, d.event_id.in_(ids), d.state == PENDING
                )
            ):
                pending[(row.subscription_id, int(row.event_id))] = row
        delivered: list[Due] = []
        for due, outcome in outcomes:
            was = pending.get(due.key)
            if was is None:
                continue
            if outcome.error is None:
                delivered.append(due)
                states[due.key] = DELIVERED
                continue
            attempts = int(was.attempts) + 1
            first = was.first_tried_at or now
            values: dict[str, Any] = {"attempts": attempts, "first_tried_at": first}
            if (
                not outcome.retry
                or attempts >= retries.max_attempts
                or (now - first).total_seconds() >= retries.max_age
            ):
                values.update(state=DEAD, done_at=now, last_error=outcome.error[:ERROR])
            else:
                at = now + timedelta(seconds=retries.delay(attempts))
                values.update(next_attempt_at=at, last_error=outcome.error[:ERROR])
            conn.execute(
                update(webhook_delivery)
                .where(
                    d.subscription_id == due.subscription_id,
                    d.event_id == due.event_id,
                    d.state == PENDING,
                )
                .values(**values)
            )
            states[due.key] = str(values.get("state", PENDING))
        for sub, ids in _by_subscription(delivered).items():
            conn.execute(
                update(webhook_delivery)
                .where(d.subscription_id == sub, d.event_id.in_(ids), d.state == PENDING)
                .values(
                    state=DELIVERED,
                    done_at=now,
                    last_error=None,
                    attempts=d.attempts + 1,
                    first_tried_at=func.coalesce(d.first_tried_at, now),
                )
            )
        for sub, ids in _by_subscription(unsent).items():
            conn.execute(
                update(webhook_delivery)
                .where(d.subscription_id == sub, d.event_id.in_(ids), d.state == PENDING)
                .values(next_attempt_at=now)
            )
    return states


def _by_subscription(dues: Iterable[Due]) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for due in dues:
        found.setdefault(due.subscription_id, []).append(due.event_id)
    return found


def prune(engine: Engine, kept: timedelta = KEEP_DELIVERED) -> int:
    """Delivered rows older than `kept` deleted (nothing reads them but a person looking),
    and the rows of a subscription deleted while a fan-out to it was inserting them: how
    many. Dead ones stay until replayed or their subscription goes."""
    with transaction(engine, DB) as conn:
        before = database_now(conn) - kept
        gone = conn.execute(
            delete(webhook_delivery).where(d.state == DELIVERED, d.done_at < before)
        ).rowcount
        orphans = conn.execute(
            delete(webhook_delivery).where(
                ~exists().where(webhook_subscription.c.id == d.subscription_id)
            )
        ).rowcount
        return int(gone) + int(orphans)


def counts(engine: Engine) -> dict[str, int]:
    """Deliveries pending and dead now (for the stock service's /metrics)."""
    with transaction(engine, DB, read_only=True) as conn:
        rows = conn.execute(
            select(d.state, func.count()).where(d.state.in_([PENDING, DEAD])).group_by(d.state)
        )
        found = {state: int(n) for state, n in rows}
    return {PENDING: found.get(PENDING, 0), DEAD: found.get(DEAD, 0)}
