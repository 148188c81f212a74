"""The webhook deliverer: `python -m stock_service.webhooks.deliverer [--name NAME]`, one
active and many standby (coordination/election.py, at ELECTION_PATH, as the relay), configured
by its environment alone (the settings of the "webhook deliverer" program).

The leader loops: record what the runs finished since the last round came to (one
transaction), fan the outbox out to the subscriptions (deliveries.FanOut; each round while it
finds new rows, else once a poll while runs are in flight), claim the runs due (a goods id's
next due events, deliveries.claim_due; at most WEBHOOK_WORKERS runs in flight, half of them
one subscription's), and POST each run's events in order from a small thread pool over
kept-alive connections, stopping at the first not delivered. A POST is signed (signing.sign) and
carries the event as GET /stock-events answers it. Nothing one subscription does stops the
others: an unreachable URL or a slow receiver holds its own worker for WEBHOOK_TIMEOUT_SECONDS
at most, and an error in a round (the database down, a bug) is logged and waited out, the
waits doubling up to MAX_BACKOFF; the rows it had not recorded are claimed again once their
claim lapses. A standby takes over from a leader that dies: the same rows, the same cursors.

What an answer means: a 2xx, delivered; a timeout, a connection error, a 5xx, 408 or 429,
tried again later (deliveries.Retries); any other answer (a 4xx, a redirect, which is not
followed) dead at once: the receiver said no, and the same body will get the same no.

Metrics: with WEBHOOK_METRICS_PORT set, served at that port's /metrics (prometheus_client):
webhook_deliveries_total by outcome (delivered, retried, dead), webhook_dead_letters_total.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections import Counter as Tally
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

import httpx
from prometheus_client import start_http_server
from sqlalchemy import Engine

from coordination.election import Elector, make_elector, serve_elected
from shared.config.settings import Settings
from shared.database.engines import DatabaseTimeouts, make_engine
from shared.programs import run_singleton
from stock_service.webhooks.addresses import url_problem
from stock_service.webhooks.deliveries import (
    DEAD_LETTERS,
    DELIVERIES,
    ELECTION_PATH,
    Due,
    FanOut,
    Outcome,
    Retries,
    claim_due,
    prune,
    record_all,
)
from stock_service.webhooks.signing import sign
from stock_service.webhooks.subscriptions import DEAD, DELIVERED

log = logging.getLogger("webhooks")
BACKOFF = 1.0  # seconds after a failed round, doubled at each failure in a row ...
MAX_BACKOFF = 30.0  # ... up to this: a database outage is not hammered, nor its log flooded
PRUNE_EVERY = 300.0  # seconds between prunes of old delivered rows
RETRIED_STATUSES = {408, 429}


def headers(due: Due, body: bytes) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "X-Inventory-Event-Id": str(due.event_id),
        "X-Inventory-Seq": str(due.seq),
        "X-Inventory-Subscription": due.subscription_id,
        "X-Inventory-Signature": sign(due.secret, body),
        "User-Agent": "inventory-webhooks/1",
    }


def body_of(due: Due) -> bytes:
    return json.dumps(due.event, separators=(",", ":")).encode()


def attempt(client: httpx.Client, due: Due, allow_private: bool) -> Outcome:
    """One POST of one event, and what it came to (never raises)."""
    problem = url_problem(due.url, allow_private)
    if problem:  # the name resolves elsewhere now, or not at all: maybe for a while
        return Outcome(f"url {problem}")
    body = body_of(due)
    try:
        answer = client.post(due.url, content=body, headers=headers(due, body))
    except httpx.TimeoutException as exc:
        return Outcome(f"timeout: {type(exc).__name__}")
    except httpx.HTTPError as exc:
        return Outcome(f"{type(exc).__name__}: {exc}")
    code = answer.status_code
    if 200 <= code < 300:
        return Outcome()
    return Outcome(f"HTTP {code}", retry=code >= 500 or code in RETRIED_STATUSES)


@dataclass
class Sent:
    """What a worker did with a run: each event tried and its outcome, in order, and the
    rest of the run, not sent (after a failure, or the run's time gone)."""

    outcomes: list[tuple[Due, Outcome]] = field(default_factory=list)
    unsent: list[Due] = field(default_factory=list)


def send_run(client: httpx.Client, run: list[Due], allow_private: bool, until: float) -> Sent:
    """A goods id's claimed events POSTed in order, stopping at the first not delivered (the
    later ones wait behind it) or when `until` (time.monotonic) has come: what a POST started
    before it may take ends before the claim lapses."""
    sent = Sent()
    for i, due in enumerate(run):
        if i and time.monotonic() >= until:
            sent.unsent = run[i:]
            break
        outcome = attempt(client, due, allow_private)
        sent.outcomes.append((due, outcome))
        if outcome.error is not None:
            sent.unsent = run[i + 1 :]
            break
    return sent


def record_done(engine: Engine, done: list[Sent], retries: Retries) -> None:
    """The finished runs' outcomes recorded, in one transaction, and counted; an error is
    logged (the claims lapse and the events are tried again)."""
    outcomes = [pair for sent in done for pair in sent.outcomes]
    unsent = [due for sent in done for due in sent.unsent]
    try:
        states = record_all(engine, outcomes, unsent, retries)
    except Exception as exc:
        log.warning("recording %d deliveries failed: %r", len(outcomes), exc)
        return
    for due, outcome in outcomes:
        state = states.get(due.key)
        if state == DELIVERED:
            DELIVERIES.labels("delivered").inc()
        elif state == DEAD:
            DELIVERIES.labels("dead").inc()
            DEAD_LETTERS.inc()
            log.warning(
                "event %d to %s is dead after %s: %s",
                due.event_id,
                due.subscription_id,
                due.attempts + 1,
                outcome.error,
            )
        elif state is not None:
            DELIVERIES.labels("retried").inc()


def retries_of(settings: Settings) -> Retries:
    return Retries(
        settings.webhook_max_attempts,
        settings.webhook_max_age_seconds,
        settings.webhook_backoff_seconds,
        settings.webhook_max_backoff_seconds,
    )


def backoff(failures: int) -> float:
    """Seconds to wait after `failures` failed rounds in a row."""
    return float(min(BACKOFF * 2 ** max(failures - 1, 0), MAX_BACKOFF))


def serve(settings: Settings, identifier: str, stop: threading.Event) -> None:
    """Campaign, deliver while leading, resign, campaign again; until `stop`. Whatever fails
    is logged, waited out and tried again (nothing restarts a deliverer that exits:
    coordination/election.py's serve_elected)."""
    engine = make_engine(
        settings.stock_database_url, application="webhooks", timeouts=DatabaseTimeouts.of(settings)
    )
    if settings.webhook_metrics_port:
        start_http_server(settings.webhook_metrics_port)
    elector = make_elector(settings, ELECTION_PATH, identifier)
    try:
        serve_elected(
            elector,
            identifier,
            stop,
            lambda _token: lead(settings, identifier, elector, engine, stop),
            backoff,
            log,
        )
    finally:
        engine.dispose()


def lead(
    settings: Settings,
    identifier: str,
    elector: Elector,
    engine: Engine,
    stop: threading.Event,
) -> None:
    """Deliver while the leader. Returns when no longer sure of it, or at `stop`, once the
    POSTs in flight are done (each within its timeout)."""
    workers = settings.webhook_workers
    per_subscription = max(1, workers // 2)
    timeout = settings.webhook_timeout_seconds
    # A POST's phases (connect, write, each read) have the timeout each: the claim outlives
    # a slow one, so no other deliverer sends the event while this one still may. A run's
    # next POST starts only in the claim's first RUN_SECONDS.
    post = 4 * timeout
    claim = post + 10
    retries = retries_of(settings)
    pool = ThreadPoolExecutor(workers, thread_name_prefix="webhook")
    client = httpx.Client(timeout=timeout, follow_redirects=False)  # kept-alive connections
    in_flight: dict[Future[Sent], str] = {}
    done: list[Sent] = []
    fan_out = FanOut()
    failures, pruned, fanned, made = 0, 0.0, 0.0, 0
    try:
        while not stop.is_set():
            if not elector.is_leader():
                log.warning("%s not the leader any more at=%.3f", identifier, time.time())
                return
            try:
                if done:
                    finished, done = done, []
                    record_done(engine, finished, retries)
                # Each round while busy (a round a run ends), at most each poll while busy
                # and nothing new came: a fan-out is a transaction per subscription.
                if (
                    made
                    or not in_flight
                    or time.monotonic() - fanned >= settings.webhook_poll_seconds
                ):
                    made = fan_out(engine)
                    fanned = time.monotonic()
                busy = Tally(in_flight.values())
                until = time.monotonic() + claim - post - 5
                for run in claim_due(
                    engine, workers - len(in_flight), claim, busy, per_subscription
                ):
                    future = pool.submit(
                        send_run, client, run, settings.webhook_allow_private, until
                    )
                    in_flight[future] = run[0].subscription_id
                if time.monotonic() - pruned > PRUNE_EVERY:
                    prune(engine)
                    pruned = time.monotonic()
                failures = 0
            except Exception as exc:
                failures += 1
                log.warning("%s round failed at=%.3f: %r", identifier, time.time(), exc)
                engine.dispose()
                stop.wait(backoff(failures))
                continue
            if in_flight:
                finished_now, _ = wait(in_flight, settings.webhook_poll_seconds, FIRST_COMPLETED)
                for future in finished_now:
                    in_flight.pop(future)
                    if future.exception() is None:
                        done.append(future.result())
                    else:  # a bug: logged, and its claims lapse
                        log.warning("a run failed: %r", future.exception())
            else:
                stop.wait(settings.webhook_poll_seconds)
    finally:
        pool.shutdown(wait=True)
        client.close()
        done += [f.result() for f in in_flight if f.exception() is None]
        if done:
            record_done(engine, done, retries)


def main(argv: list[str] | None = None) -> int:
    return run_singleton("webhook deliverer", serve, argv)


if __name__ == "__main__":
    sys.exit(main())
