"""Webhook deliveries end to end: a receiver (http.server on 127.0.0.1, WEBHOOK_ALLOW_PRIVATE
on) gets each stock event POSTed and signed; a 503 is tried again until a 200; each goods id's
events arrive in seq order across a receiver restart; an event is dead after its attempts,
listed, replayed and delivered; a 400 is not tried again; a deliverer restarted resumes from
the stored cursor; of two deliverers one delivers, and the other takes over when it goes; an
event committed after a later id is delivered too; a slow receiver holds up no other; the
prune keeps what is still needed.
Real ZooKeeper (the election), on SQLite, PostgreSQL and MariaDB (the claims compare stored
times; the fan-out moves a cursor), each module on a database of its own: a deliverer sends
to every subscription it finds, and the session's database holds the other tests'."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from inventory.local.servers import ServerProcess, wait_until
from shared.config.settings import Settings
from shared.database.engines import DatabaseUnavailable, utcnow
from stock_service.storage.tables import stock_outbox, webhook_delivery, webhook_subscription
from stock_service.webhooks import deliverer, serve, verify
from stock_service.webhooks.deliveries import FanOut, Retries, claim_due, prune, record_all
from tests.conftest import ADMIN, BACKENDS, make_settings, unique
from tests.fresh_database import fresh_database
from tests.helpers import Services, running_services

WAIT = 20.0  # seconds any one delivery may take to show, at most (they take milliseconds)


@dataclass
class Received:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def event(self) -> dict[str, str]:
        return dict(json.loads(self.body))


@dataclass
class Receiver:
    """An HTTP receiver on 127.0.0.1 that records every POST and answers the statuses queued
    (`answers`), then `otherwise`."""

    port: int = 0
    otherwise: int = 200
    slow: float = 0.0  # seconds each answer takes
    answers: deque[int] = field(default_factory=deque)
    got: list[Received] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                status = receiver.answers.popleft() if receiver.answers else receiver.otherwise
                if receiver.slow:
                    time.sleep(receiver.slow)  # a slow receiver, on purpose
                receiver.got.append(Received(status, dict(self.headers.items()), body))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def delivered(self, goods: str | None = None) -> list[dict[str, str]]:
        """The events answered 2xx, each once (a receiver dedupes by X-Inventory-Event-Id),
        in the order they first came."""
        seen: set[str] = set()
        found = []
        for got in list(self.got):
            event_id = got.headers["X-Inventory-Event-Id"]
            if 200 <= got.status < 300 and event_id not in seen:
                seen.add(event_id)
                if goods is None or got.event["goodsId"] == goods:
                    found.append(got.event)
        return found


@pytest.fixture(scope="module", params=BACKENDS)
def database(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    yield from fresh_database(request.param, tmp_path_factory.mktemp("hooks"), "order", "stock")


@pytest.fixture
def settings(database: str, zk_server: ServerProcess, redis_server: ServerProcess) -> Settings:
    return make_settings(
        database,
        zk_server,
        redis_server,
        webhook_allow_private=True,
        webhook_backoff_seconds=0.02,
        webhook_max_backoff_seconds=0.1,
        webhook_poll_seconds=0.02,
        webhook_timeout_seconds=2.0,
        zk_session_timeout=3.0,
    )


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    with running_services(settings) as s:
        yield s
        # This module's subscriptions are its tests' own: the next test's deliverer must not
        # keep sending to a receiver that is gone.
        with s.engine.begin() as conn:
            conn.execute(sa.delete(webhook_delivery))
            conn.execute(sa.delete(webhook_subscription))


class Deliverers:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.stops: dict[str, threading.Event] = {}
        self.threads: dict[str, threading.Thread] = {}

    def start(self, name: str, **changes: Any) -> None:
        stop = threading.Event()
        settings = self.settings.with_(**changes) if changes else self.settings
        thread = threading.Thread(target=serve, args=(settings, name, stop), daemon=True)
        self.stops[name], self.threads[name] = stop, thread
        thread.start()

    def stop(self, name: str) -> None:
        self.stops[name].set()
        self.threads[name].join(15)
        assert not self.threads[name].is_alive(), f"deliverer {name} did not stop"


@pytest.fixture
def deliverers(settings: Settings) -> Iterator[Deliverers]:
    made = Deliverers(settings)
    yield made
    for name, stop in made.stops.items():
        if not stop.is_set():
            made.stop(name)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver().start()
    yield made
    made.stop()


def subscribe(services: Services, url: str, **body: Any) -> dict[str, Any]:
    made = services.stock.post("/subscriptions", json={"url": url, **body}, headers=ADMIN)
    assert made.status_code == 201, made.json
    return dict(made.json)


def move(services: Services, goods: str, *levels: int) -> None:
    """Each level set is a ledger entry of `goods`, and a stock event."""
    for level in levels:
        services.seed(goods, level)


def write_events(services: Services, goods: str, first_seq: int, count: int) -> None:
    """Outbox rows as a ledger's commits write them (faster than the lock's way, for counts)."""
    with services.engine.begin() as conn:
        conn.execute(
            sa.insert(stock_outbox),
            [
                {
                    "goods_id": goods,
                    "seq": seq,
                    "kind": "adjusted",
                    "delta": 1,
                    "level": seq,
                    "flag": None,
                    "reason": "restock",
                    "created_at": utcnow(),
                }
                for seq in range(first_seq, first_seq + count)
            ],
        )


def seqs(events: list[dict[str, str]]) -> list[int]:
    return [int(e["seq"]) for e in events]


def dead_letters(services: Services, subscription: str) -> list[dict[str, Any]]:
    answer = services.stock.get(f"/subscriptions/{subscription}/failed", headers=ADMIN)
    assert answer.status_code == 200, answer.json
    return list(answer.json["failed"])


def waits(check: Callable[[], bool], what: str) -> None:
    wait_until(check, WAIT, what, interval=0.02)


def test_a_delivery_is_the_event_as_the_catch_up_route_has_it_signed_with_the_secret(
    services: Services, deliverers: Deliverers, receiver: Receiver
) -> None:
    secret = "the-receiver-s-own-secret-" + unique()
    goods = unique()
    sub = subscribe(services, receiver.url, goodsIds=[goods], secret=secret)
    deliverers.start(unique("d"))
    move(services, goods, 5, 3)
    waits(lambda: len(receiver.delivered(goods)) == 2, "two deliveries")
    first = next(g for g in receiver.got if g.event["goodsId"] == goods)
    assert verify(secret, first.body, first.headers["X-Inventory-Signature"])
    assert not verify("another-secret-of-16+", first.body, first.headers["X-Inventory-Signature"])
    assert not verify(secret, first.body + b" ", first.headers["X-Inventory-Signature"])
    assert first.headers["Content-Type"] == "application/json"
    assert first.headers["X-Inventory-Subscription"] == sub["id"]
    assert first.headers["X-Inventory-Event-Id"] == first.event["id"]
    assert first.headers["X-Inventory-Seq"] == first.event["seq"] == "1"
    after = int(first.event["id"]) - 1
    page = services.stock.get(f"/stock-events?after={after}&limit=1").json["events"]
    assert page == [first.event]  # the very event, every field as GET /stock-events has it
    assert seqs(receiver.delivered(goods)) == [1, 2]


def test_a_receiver_answering_503_is_tried_again_until_it_answers_200(
    services: Services, deliverers: Deliverers, receiver: Receiver
) -> None:
    goods = unique()
    receiver.answers.extend([503, 503, 503])
    subscribe(services, receiver.url, goodsIds=[goods])
    deliverers.start(unique("d"))
    move(services, goods, 7)
    waits(lambda: len(receiver.delivered(goods)) == 1, "the delivery")
    statuses = [g.status for g in receiver.got if g.event["goodsId"] == goods]
    assert statuses == [503, 503, 503, 200]

    def row() -> Any:
        with services.engine.connect() as conn:
            return conn.execute(sa.select(webhook_delivery)).one()

    waits(lambda: row().state == "delivered", "the 200 recorded")  # just after it was answered
    assert (row().attempts, row().last_error) == (4, None)


def test_each_goods_id_s_events_arrive_in_seq_order_across_a_receiver_restart(
    services: Services, deliverers: Deliverers, receiver: Receiver
) -> None:
    a, b = unique("a"), unique("b")
    subscribe(services, receiver.url, goodsIds=[a, b])
    deliverers.start(unique("d"), webhook_max_attempts=10_000)  # none given up meanwhile
    write_events(services, a, 1, 3)
    waits(lambda: len(receiver.delivered(a)) == 3, "a's first three")
    receiver.stop()  # connection refused: every attempt fails, and is tried again
    write_events(services, a, 4, 20)
    write_events(services, b, 1, 20)
    write_events(services, a, 24, 5)

    def failing() -> int:
        with services.engine.connect() as conn:  # a new snapshot each look (MariaDB's)
            return int(
                conn.execute(
                    sa.select(sa.func.count())
                    .select_from(webhook_delivery)
                    .where(webhook_delivery.c.attempts > 0, webhook_delivery.c.state == "pending")
                ).scalar_one()
            )

    waits(lambda: failing() >= 2, "attempts failing while the receiver is down")
    receiver.start()  # the same port
    waits(lambda: len(receiver.delivered(a)) == 28 and len(receiver.delivered(b)) == 20, "all")
    assert seqs(receiver.delivered(a)) == list(range(1, 29))
    assert seqs(receiver.delivered(b)) == list(range(1, 21))


def test_an_event_dead_after_its_attempts_is_listed_replayed_and_delivered(
    services: Services, deliverers: Deliverers, receiver: Receiver
) -> None:
    goods = unique()
    receiver.otherwise = 500
    sub = subscribe(services, receiver.url, goodsIds=[goods])
    deliverers.start(unique("d"), webhook_max_attempts=3)
    write_events(services, goods, 1, 1)
    waits(lambda: len(dead_letters(services, sub["id"])) == 1, "a dead letter")
    [dead] = dead_letters(services, sub["id"])
    assert (dead["goodsId"], dead["seq"], dead["kind"]) == (goods, 1, "adjusted")
    assert (dead["attempts"], dead["lastError"]) == (3, "HTTP 500")
    assert dead["firstTriedAt"] <= dead["deadAt"]
    assert len([g for g in receiver.got if g.event["goodsId"] == goods]) == 3
    metrics = services.stock.get("/metrics").get_data(as_text=True)
    assert 'webhook_deliveries_waiting{state="dead"} 1.0' in metrics
    receiver.otherwise = 200
    write_events(services, goods, 2, 1)  # the line goes on past the dead event
    waits(lambda: seqs(receiver.delivered(goods)) == [2], "the next event")
    answer = services.stock.post(
        f"/subscriptions/{sub['id']}/failed/replay",
        json={"eventIds": [dead["eventId"]]},
        headers=ADMIN,
    )
    assert answer.status_code == 202 and answer.json == {"replayed": 1}
    waits(lambda: seqs(receiver.delivered(goods)) == [2, 1], "the replayed event")
    assert dead_letters(services, sub["id"]) == []
    again = services.stock.post(f"/subscriptions/{sub['id']}/failed/replay", json={}, headers=ADMIN)
    assert again.json == {"replayed": 0}


def test_a_400_is_dead_at_once_and_not_tried_again(
    services: Services, deliverers: Deliverers, receiver: Receiver
) -> None:
    goods = unique()
    receiver.answers.append(400)
    sub = subscribe(services, receiver.url, goodsIds=[goods])
    deliverers.start(unique("d"))
    write_events(services, goods, 1, 2)
    waits(lambda: len(dead_letters(services, sub["id"])) == 1, "a dead letter")
    waits(lambda: seqs(receiver.delivered(goods)) == [2], "the next event")
    [dead] = dead_letters(services, sub["id"])
    assert (dead["seq"], dead["attempts"], dead["lastError"]) == (1, 1, "HTTP 400")
    assert [g.status for g in receiver.got] == [400, 200]  # seq 1 once, never again


def test_a_restarted_deliverer_resumes_from_the_stored_cursor(
    services: Services, deliverers: Deliverers, receiver: Receiver
) -> None:
    goods = unique()
    sub = subscribe(services, receiver.url, goodsIds=[goods])
    first = unique("d")
    deliverers.start(first)
    write_events(services, goods, 1, 10)
    waits(lambda: len(receiver.delivered(goods)) == 10, "ten")
    deliverers.stop(first)
    with services.engine.connect() as conn:
        cursor = conn.execute(
            sa.select(webhook_subscription.c.fanned_to).where(
                webhook_subscription.c.id == sub["id"]
            )
        ).scalar_one()
    assert cursor == max(int(e["id"]) for e in receiver.delivered(goods))
    write_events(services, goods, 11, 10)  # while no deliverer runs
    deliverers.start(unique("d"))
    waits(lambda: len(receiver.delivered(goods)) == 20, "twenty")
    assert seqs(receiver.delivered(goods)) == list(range(1, 21))  # none lost, none skipped
    posts = [g for g in receiver.got if g.event["goodsId"] == goods]
    assert len(posts) == 20  # and none sent twice: the first had recorded each


def test_of_two_deliverers_one_delivers_and_the_other_takes_over_when_it_goes(
    services: Services,
    deliverers: Deliverers,
    receiver: Receiver,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="webhooks")
    goods = unique()
    subscribe(services, receiver.url, goodsIds=[goods])
    names = [unique("d1"), unique("d2")]
    for name in names:
        deliverers.start(name)
    write_events(services, goods, 1, 10)
    waits(lambda: len(receiver.delivered(goods)) == 10, "ten")

    def elected() -> list[str]:
        return [r.getMessage().split()[0] for r in caplog.records if " elected " in r.getMessage()]

    [leader] = elected()
    deliverers.stop(leader)
    write_events(services, goods, 11, 10)
    waits(lambda: len(receiver.delivered(goods)) == 20, "twenty")
    assert elected() == [leader, next(n for n in names if n != leader)]
    assert seqs(receiver.delivered(goods)) == list(range(1, 21))


def test_a_deleted_subscription_gets_nothing_more(
    services: Services, deliverers: Deliverers, receiver: Receiver
) -> None:
    goods = unique()
    receiver.otherwise = 503
    sub = subscribe(services, receiver.url, goodsIds=[goods])
    deliverers.start(unique("d"))
    write_events(services, goods, 1, 3)
    waits(lambda: len(receiver.got) >= 1, "a first attempt")
    assert services.stock.delete(f"/subscriptions/{sub['id']}", headers=ADMIN).status_code == 204
    with services.engine.connect() as conn:
        left = conn.execute(
            sa.select(sa.func.count())
            .select_from(webhook_delivery)
            .where(webhook_delivery.c.subscription_id == sub["id"])
        ).scalar_one()
    assert left == 0  # its pending deliveries went with it


# The servers only: SQLite lets one writer at a time, so no later id can commit first.
@pytest.mark.parametrize("database", ["postgresql", "mysql"], indirect=True)
def test_an_event_committed_after_a_later_id_is_delivered_too(
    services: Services, deliverers: Deliverers, receiver: Receiver
) -> None:
    """Ids are given at insert: a writer paused inside its transaction commits its event
    after a later id was read and delivered. The cursor waits before the hole (its rows are
    young), so the late event is fanned out and delivered when it commits."""
    late, early = unique("late"), unique("early")
    subscribe(services, receiver.url, goodsIds=[late, early])
    deliverers.start(unique("d"))
    row = {"seq": 1, "kind": "adjusted", "delta": 1, "level": 1, "created_at": utcnow()}
    with services.engine.connect() as paused:
        transaction = paused.begin()
        paused.execute(sa.insert(stock_outbox), [{**row, "goods_id": late}])  # its id taken
        write_events(services, early, 1, 3)  # later ids, committed first
        waits(lambda: len(receiver.delivered(early)) == 3, "the later ids")
        transaction.commit()
    waits(lambda: len(receiver.delivered(late)) == 1, "the late commit")
    first_early = min(int(e["id"]) for e in receiver.delivered(early))
    assert int(receiver.delivered(late)[0]["id"]) < first_early
    write_events(services, early, 4, 2)  # and the cursor goes on past it
    waits(lambda: len(receiver.delivered(early)) == 5, "the next ones")


@pytest.mark.parametrize("database", ["postgresql", "mysql"], indirect=True)
def test_an_event_committed_late_past_a_hole_goes_before_its_goods_ids_later_ones(
    services: Services,
    deliverers: Deliverers,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The cursor waits at a young hole (a writer paused) while the rows past it are fanned
    out from how far they were read. A row of `late` whose id was read past before it
    committed must still go before `late`'s later events, not wait for the cursor's walk.
    Pages of 2 rows: the walk from the cursor no longer reaches it (in a chaos run, the rows
    past a hole were thousands)."""
    monkeypatch.setattr(FanOut.__init__, "__defaults__", (2,))
    hole, late, other = unique("hole"), unique("late"), unique("other")
    subscribe(services, receiver.url, goodsIds=[hole, late, other])
    deliverers.start(unique("d"))
    row = {"seq": 1, "kind": "adjusted", "delta": 1, "level": 1, "created_at": utcnow()}
    with services.engine.connect() as stuck, services.engine.connect() as paused:
        held = stuck.begin()
        stuck.execute(sa.insert(stock_outbox), [{**row, "goods_id": hole}])  # the cursor waits
        write_events(services, other, 1, 2)
        waits(lambda: len(receiver.delivered(other)) == 2, "the rows past the hole")
        slow = paused.begin()
        paused.execute(sa.insert(stock_outbox), [{**row, "goods_id": late}])  # its id taken
        write_events(services, other, 3, 2)
        waits(lambda: len(receiver.delivered(other)) == 4, "the rows past late's id")
        slow.commit()
        write_events(services, late, 2, 2)  # its later events, read with the next rows
        waits(lambda: len(receiver.delivered(late)) == 3, "late's three, the hole still open")
        assert seqs(receiver.delivered(late)) == [1, 2, 3]
        held.commit()
    waits(lambda: len(receiver.delivered(hole)) == 1, "the hole's row once committed")


def test_a_slow_receiver_does_not_hold_up_another_subscription(
    services: Services, deliverers: Deliverers, receiver: Receiver
) -> None:
    slow = Receiver(slow=2.0).start()
    try:
        goods = [unique("slow") for _ in range(12)]
        fast = unique("fast")
        subscribe(services, slow.url, goodsIds=goods)
        subscribe(services, receiver.url, goodsIds=[fast])
        deliverers.start(unique("d"), webhook_workers=4)  # the slow one may take 2 of them
        for g in goods:
            write_events(services, g, 1, 1)  # 12 lines of 2 s each for the slow receiver
        write_events(services, fast, 1, 20)
        waits(lambda: len(receiver.delivered(fast)) == 20, "the fast receiver's twenty")
        # not behind the slow one's lines (12 of 2 s each on its 2 workers: 12 s), no clock
        # read: the slow receiver is still at work when the fast one has all twenty
        assert len(slow.delivered()) < 12
    finally:
        slow.stop()


def test_the_prune_deletes_old_delivered_rows_and_orphans_but_not_dead_letters(
    services: Services,
) -> None:
    sub = subscribe(services, "http://127.0.0.1:9/hook")["id"]
    old = utcnow() - timedelta(days=2)
    base = {"goods_id": "g", "seq": 1, "kind": "adjusted", "attempts": 1, "next_attempt_at": old}
    rows = [
        {**base, "subscription_id": sub, "event_id": 1, "state": "delivered", "done_at": old},
        {**base, "subscription_id": sub, "event_id": 2, "state": "delivered", "done_at": utcnow()},
        {**base, "subscription_id": sub, "event_id": 3, "state": "dead", "done_at": old},
        {**base, "subscription_id": "gone", "event_id": 4, "state": "pending", "done_at": None},
    ]
    with services.engine.begin() as conn:
        conn.execute(sa.insert(webhook_delivery), rows)
    assert prune(services.engine) == 2
    with services.engine.connect() as conn:
        left = conn.execute(sa.select(webhook_delivery.c.event_id).order_by("event_id"))
        assert list(left.scalars()) == [2, 3]


def test_a_deliverer_waits_out_a_database_outage_and_goes_on(
    services: Services,
    deliverers: Deliverers,
    receiver: Receiver,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A round that fails (here its claim: the stock database down, as the engine reports it)
    is logged and tried again after a back-off; the deliverer does not exit."""
    caplog.set_level(logging.WARNING, logger="webhooks")
    real, failures = deliverer.claim_due, [DatabaseUnavailable("stock database")]

    def claim_or_fail(*args: Any, **kwargs: Any) -> Any:
        if failures:
            raise failures.pop()
        return real(*args, **kwargs)

    monkeypatch.setattr(deliverer, "claim_due", claim_or_fail)
    goods = unique()
    subscribe(services, receiver.url, goodsIds=[goods])
    deliverers.start(unique("d"))
    write_events(services, goods, 1, 3)
    waits(lambda: seqs(receiver.delivered(goods)) == [1, 2, 3], "the events after the outage")
    assert not failures
    assert len([r for r in caplog.records if "round failed" in r.getMessage()]) == 1


def test_a_run_claimed_together_and_failing_in_the_middle_keeps_the_goods_id_s_order(
    services: Services,
) -> None:
    """Six due events of one goods id are claimed as one run; its worker sends them in order
    and stops at the third (a 503): the first two are recorded delivered, the third is
    pending with its attempt counted, and the three after it are let go unsent, due again
    behind it. The next claim starts the run at the third."""
    goods, many = unique(), unique("many")
    sub = subscribe(services, "http://127.0.0.1:9/hook", goodsIds=[goods, many])["id"]
    write_events(services, goods, 1, 6)
    write_events(services, many, 1, 50)
    FanOut()(services.engine)
    [run, long] = claim_due(services.engine, 4, 60.0, {}, 2)
    assert [due.seq for due in run] == [1, 2, 3, 4, 5, 6]
    assert [due.seq for due in long] == list(range(1, 21))  # a run is 20 at most
    assert claim_due(services.engine, 4, 60.0, {}, 2) == []  # the line is claimed
    statuses, posted = deque([200, 200, 503]), []

    def answer(request: httpx.Request) -> httpx.Response:
        posted.append(int(request.headers["X-Inventory-Seq"]))
        return httpx.Response(statuses.popleft() if statuses else 200)

    with httpx.Client(transport=httpx.MockTransport(answer)) as client:
        sent = deliverer.send_run(client, run, True, time.monotonic() + 60)
    assert posted == [1, 2, 3]  # none after the failure
    assert [due.seq for due in sent.unsent] == [4, 5, 6]
    retries = Retries(max_attempts=8, max_age=86_400.0, base=0.0, cap=0.0)  # due again at once
    states = record_all(services.engine, sent.outcomes, sent.unsent, retries)
    assert [states[due.key] for due, _ in sent.outcomes] == ["delivered", "delivered", "pending"]
    with services.engine.connect() as conn:
        rows = conn.execute(
            sa.select(webhook_delivery)
            .where(webhook_delivery.c.subscription_id == sub, webhook_delivery.c.goods_id == goods)
            .order_by(webhook_delivery.c.event_id)
        ).all()
    assert [(r.seq, r.state, r.attempts) for r in rows] == [
        (1, "delivered", 1),
        (2, "delivered", 1),
        (3, "pending", 1),
        (4, "pending", 0),
        (5, "pending", 0),
        (6, "pending", 0),
    ]
    assert rows[2].last_error == "HTTP 503"
    [again] = claim_due(services.engine, 4, 60.0, {}, 2)  # the other line is still claimed
    assert [due.seq for due in again] == [3, 4, 5, 6]  # the failed one first, then the rest
    assert again[0].attempts == 1
