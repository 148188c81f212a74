"""`inventory demo webhooks`: the stock events pushed to a receiver, signed, retried, in order per
goods id, one dead-lettered and replayed, none lost (docs/webhooks.md), on a stack of its own
that runs one deliverer (`python -m stock_service.webhooks.deliverer`) with its backoff made
short (WEBHOOK_BACKOFF_SECONDS) so the story takes seconds.

1. A receiver in a thread of this process on 127.0.0.1 (WEBHOOK_ALLOW_PRIVATE=true on the
   stack): it verifies each delivery's signature with the subscription's secret (`verify` of
   stock_service.webhooks), keeps the first receipt of each event id and counts the repeats,
   answers its first few deliveries 503 on purpose, and 400 once to one chosen event (the case's
   first deduction): that one is dead at once.
2. The subscription: POST /subscriptions (the admin token) for the run's two goods ids.
3. Stock moves: both goods ids seeded, three orders through the order flow, a restock.
4. The retries: each 503 sent again after its backoff, until 2xx.
5. The order kept: per goods id, the first receipts in seq order (the dead one aside).
6. The dead letter in GET /subscriptions/{id}/failed, replayed (POST .../failed/replay), then
   delivered; the list empty again.
7. Nothing lost: every event of GET /stock-events of the run's goods ids received at least once
   with a good signature (W1 of the chaos run, inventory/chaos/webhooks/check.py, on this run's
   receipts), repeats counted. The invariants (I1-I9) at the end.
"""

from __future__ import annotations

import secrets
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import httpx
from rich.console import Console

from inventory.chaos.catch_up import events_after
from inventory.chaos.webhooks.check import judge
from inventory.chaos.webhooks.receipts import Receipt, serving
from inventory.check.events import OutboxRow
from inventory.local.client import StackClient
from inventory.local.servers import wait_until
from inventory.scenarios.rig import ScenarioResult, Story, finish, order_body, scenario_stack

FAIL_FIRST = 3  # deliveries answered 503 before any is accepted
WAIT = 30.0  # seconds for the deliveries to arrive (they take about one)
# The deliverer's settings for the story: retries a tenth of a second apart, not seconds.
WEBHOOK_ENV = {
    "WEBHOOK_ALLOW_PRIVATE": "true",  # the receiver is on 127.0.0.1
    "WEBHOOK_BACKOFF_SECONDS": "0.1",
    "WEBHOOK_MAX_BACKOFF_SECONDS": "0.5",
    "WEBHOOK_POLL_SECONDS": "0.1",
    "WEBHOOK_TIMEOUT_SECONDS": "2",
    "WEBHOOK_MAX_ATTEMPTS": "10",
}


class Receiver:
    """What the story's receiver does with each delivery and what it remembers of them."""

    def __init__(self, refuse: Callable[[Receipt], bool]) -> None:
        self.refuse = refuse  # the event to answer 400, once
        self.log: list[Receipt] = []  # every delivery, in the order received
        self.first: dict[int, Receipt] = {}  # the first accepted receipt of each event id
        self.refused: Receipt | None = None
        self.answered = 0  # counted as answered, not as logged: deliveries come in parallel
        self._lock = threading.Lock()

    def answer(self, receipt: Receipt) -> int:
        with self._lock:
            if not receipt.valid:
                return 401
            self.answered += 1
            if self.answered <= FAIL_FIRST:
                return 503
            if self.refused is None and self.refuse(receipt):
                self.refused = receipt
                return 400
            return 200

    def keep(self, receipt: Receipt) -> None:
        with self._lock:
            self.log.append(receipt)
            if receipt.accepted and receipt.valid:
                self.first.setdefault(receipt.event_id, receipt)

    def attempts(self) -> dict[int, list[int]]:
        """Each event's answers, in order."""
        with self._lock:
            found: dict[int, list[int]] = {}
            for r in self.log:
                found.setdefault(r.event_id, []).append(r.status)
            return found

    def repeats(self) -> int:
        with self._lock:
            accepted = Counter(r.event_id for r in self.log if r.accepted)
            return sum(n - 1 for n in accepted.values())

    def firsts(self) -> list[Receipt]:
        with self._lock:
            return sorted(self.first.values(), key=self.log.index)


def webhooks(console: Console | None = None) -> ScenarioResult:
    story = Story(console)
    prefix = f"sc-wh-{uuid.uuid4().hex[:6]}-"
    phone, case = prefix + "phone", prefix + "case"
    secret = secrets.token_urlsafe(24)
    # The case's first deduction (seq 2: its seed is seq 1) is refused once: dead at once. The
    # 503s never reach it: it waits behind the case's seed, accepted only after the 503s.
    receiver = Receiver(lambda r: (r.goods_id, r.kind, r.seq) == (case, "deducted", 2))
    facts: dict[str, Any] = {}
    with (
        scenario_stack("webhooks", WEBHOOK_ENV, deliverers=1) as state,
        serving(secret, receiver.answer, receiver.keep) as server,
    ):
        client = StackClient(state)
        try:
            started = time.monotonic()  # the story's own time, the stack's start aside
            url = f"http://127.0.0.1:{server.server_port}/hooks/stock"
            subscription = _subscribe(story, client, url, secret, [phone, case])
            _move_stock(story, client, phone, case)
            rows = _outbox(state.stock_url, prefix)
            dead = _wait_for_all(story, receiver, subscription, client, rows)
            facts["retries"] = _retries(story, receiver)
            facts["order"] = _order_kept(story, receiver, [phone, case])
            facts["dead"] = dead
            facts["replay"] = _replay(story, client, receiver, subscription, dead)
            facts["lost"] = _nothing_lost(story, receiver, _outbox(state.stock_url, prefix), dead)
            facts["seconds"] = round(time.monotonic() - started, 1)
            story.step("The checks: the invariants (I1-I9, as `inventory check`).")
            checks = finish(state, story, prefix)
        finally:
            client.close()
    facts["violated"] = [f"{c.invariant} {c.name}" for c in checks if not c.ok]
    return _verdict(facts, checks)


def _subscribe(
    story: Story, client: StackClient, url: str, secret: str, goods: list[str]
) -> dict[str, Any]:
    story.step(
        f"A receiver on {url} (a thread of this process): it verifies each signature with the "
        f"subscription's secret, answers its first {FAIL_FIRST} deliveries 503 on purpose, and "
        "400 once to the case's first deduction. It subscribes, with the admin token:"
    )
    answer = client.stock.post(
        "/subscriptions", json={"url": url, "goodsIds": goods, "secret": secret}
    )
    answer.raise_for_status()
    got: dict[str, Any] = answer.json()
    story.show(
        f"POST /subscriptions {{url, goodsIds: \\[phone, case], secret}} -> {answer.status_code} "
        f"id {got['id']}, kinds {got.get('kinds') or 'all'}"
    )
    return got


def _move_stock(story: Story, client: StackClient, phone: str, case: str) -> None:
    story.step(
        "Stock moves on both goods ids: each seeded (PUT /stock), three orders through the "
        "order flow (POST /genOrder), a restock of the phone (POST .../adjustments)."
    )
    for goods_id, level in ((phone, 10), (case, 6)):
        client.seed(goods_id, level)
        story.show(f"PUT /stock/{goods_id} {{num: {level}}}")
    for user, items in (
        ("alice", [(phone, 2)]),
        ("bob", [(case, 1)]),
        ("carol", [(phone, 1), (case, 2)]),
    ):
        body = order_body(user, items[0][0], items[0][1])
        body["items"] = [{"goodsId": g, "num": n} for g, n in items]
        answer = client.gen_order(body)
        said = ", ".join(f"{g.rsplit('-', 1)[-1]} x{n}" for g, n in items)
        story.show(f"POST /genOrder {user}: {said} -> {answer.status_code} {_status(answer)}")
    answer = client.adjust(phone, delta=5, reason="restock", reference="webhooks demo")
    answer.raise_for_status()
    said = "{delta: 5, reason: restock}"
    story.show(f"POST /stock/{phone}/adjustments {said} -> {answer.status_code}")


def _status(answer: httpx.Response) -> str:
    try:
        return str(answer.json().get("status", ""))
    except ValueError:
        return ""


def _outbox(stock_url: str, prefix: str) -> list[OutboxRow]:
    """The run's events as GET /stock-events gives them (every value a string)."""
    return [
        OutboxRow(
            int(e["id"]),
            str(e["goodsId"]),
            int(e["seq"]),
            str(e["kind"]),
            int(e["delta"]),
            int(e["level"]),
        )
        for e in events_after(stock_url, 0)
        if str(e["goodsId"]).startswith(prefix)
    ]


def _failed(client: StackClient, subscription: dict[str, Any]) -> list[dict[str, Any]]:
    answer = client.stock.get(f"/subscriptions/{subscription['id']}/failed")
    answer.raise_for_status()
    return list(answer.json()["failed"])


def _wait_for_all(
    story: Story,
    receiver: Receiver,
    subscription: dict[str, Any],
    client: StackClient,
    rows: list[OutboxRow],
) -> dict[str, Any]:
    """Until every event was accepted but one, and that one is in the dead letters."""
    story.step(
        f"The deliverer pushes the {len(rows)} events; the receiver's first receipts come "
        "(polled until each event is received, or dead-lettered):"
    )
    dead: dict[str, Any] = {}

    def done() -> bool:
        missing = [r.id for r in rows if r.id not in receiver.first]
        if len(missing) != 1:
            return False
        found = [f for f in _failed(client, subscription) if int(f["eventId"]) in missing]
        dead.update(found[0] if found else {})
        return bool(found)

    started = time.monotonic()
    wait_until(done, WAIT, "every event received or dead-lettered", interval=0.2)
    story.show(f"all in {time.monotonic() - started:.1f} s: {len(receiver.log)} deliveries")
    return dead


def _retries(story: Story, receiver: Receiver) -> dict[str, Any]:
    story.step(f"The retries: the first {FAIL_FIRST} deliveries answered 503, each sent again:")
    retried = {e: s for e, s in receiver.attempts().items() if 503 in s}
    for event_id, statuses in retried.items():
        story.show(f"event #{event_id}: answered {' -> '.join(map(str, statuses))}")
    return {
        "answered_503": sum(s.count(503) for s in retried.values()),
        "retried_events": sorted(retried),
        "then_accepted": sorted(e for e, s in retried.items() if 200 in s),
    }


def _order_kept(story: Story, receiver: Receiver, goods: list[str]) -> dict[str, list[int]]:
    story.step(
        "The order kept: per goods id, the seqs of the first receipts in the order received "
        "(a threshold event shares its entry's seq; the dead-lettered event is not among them):"
    )
    firsts = receiver.firsts()
    seqs = {g: [r.seq for r in firsts if r.goods_id == g] for g in goods}
    for goods_id, found in seqs.items():
        story.show(f"{goods_id}: seq {found}")
    return seqs


def _replay(
    story: Story,
    client: StackClient,
    receiver: Receiver,
    subscription: dict[str, Any],
    dead: dict[str, Any],
) -> dict[str, Any]:
    event_id = int(dead["eventId"])
    story.step(
        f"The dead letter: event #{event_id} ({dead['goodsId']} seq {dead['seq']}, answered 400 "
        "once: dead at once), in GET /subscriptions/{id}/failed; replayed, then delivered:"
    )
    story.show(
        f"failed: eventId {event_id}, attempts {dead.get('attempts')}, "
        f"lastError {dead.get('lastError')!r}"
    )
    path = f"/subscriptions/{subscription['id']}/failed/replay"
    answer = client.stock.post(path, json={"eventIds": [event_id]})
    answer.raise_for_status()
    story.show(f"POST {path} {{eventIds: [{event_id}]}} -> {answer.status_code} {answer.json()}")
    wait_until(lambda: event_id in receiver.first, WAIT, f"event #{event_id} after its replay")
    left = _failed(client, subscription)
    story.show(f"event #{event_id} received; GET .../failed now lists {len(left)}")
    return {
        "event": event_id,
        "code": answer.status_code,
        "replayed": answer.json().get("replayed"),
        "delivered": event_id in receiver.first,
        "failed_after": [int(f["eventId"]) for f in left],
    }


def _nothing_lost(
    story: Story, receiver: Receiver, rows: list[OutboxRow], dead: dict[str, Any]
) -> dict[str, Any]:
    story.step(
        "Nothing lost: every event of GET /stock-events for the run's goods ids received at "
        "least once, signed (W1 of the chaos run, on this run's receipts):"
    )
    judged = judge(rows, list(receiver.log), dead=(), replayed={int(dead["eventId"])})
    n = judged.numbers
    story.show(
        f"{n['rows']} events, {n['delivered']} received, {receiver.repeats()} repeats, "
        f"{len(judged.lost)} lost, {len(judged.bad_signatures)} bad signatures, "
        f"{len(judged.out_of_order)} out of order"
    )
    return {
        "events": n["rows"],
        "received": n["delivered"],
        "repeats": receiver.repeats(),
        "violations": judged.violations,
    }


def _verdict(facts: dict[str, Any], checks: list[Any]) -> ScenarioResult:
    lost, replay, retries = facts["lost"], facts["replay"], facts["retries"]
    ordered = all(seqs == sorted(seqs) for seqs in facts["order"].values())
    ok = (
        retries["answered_503"] == FAIL_FIRST
        and retries["then_accepted"] == retries["retried_events"]
        and ordered
        and replay["delivered"]
        and replay["failed_after"] == []
        and lost["received"] == lost["events"]
        and not lost["violations"]
        and not facts["violated"]
    )
    verdict = (
        f"{lost['events']} events delivered, {retries['answered_503']} retried after a 503, "
        f"event #{replay['event']} dead-lettered and replayed; in seq order per goods id, "
        f"none lost ({lost['repeats']} repeats)"
        if ok
        else f"NOT shown: {facts}"
    )
    return ScenarioResult("webhooks", ok, verdict, checks, facts)
