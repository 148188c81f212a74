"""`inventory reconciler`: reconciliation as a service, one active and many standby. Every
instance campaigns (coordination/election.py); the leader runs a pass every RECONCILE_INTERVAL; the
others wait to take over.

A leader that was paused or cut off must not act once deposed. Two guards, for two windows:
- Before each pass it asks whether it still leads (ZooKeeper: no suspension or loss of its
  connection since it was elected, and its node still there; etcd: the election's leader key
  is still its own, on a lease still renewed). A leader that is not sure resigns and campaigns
  again: after a ZooKeeper blip the session survives, but the leadership is not trusted, and
  either this instance or a standby is elected anew, with a new token.
- A pause after that question (inside the pass) cannot be seen by the leader. Each write
  carries its leader token and first moves the reconciler fence up to it, in the write's own
  transaction (transitions.move): once a newer leader has written, the older one's writes are
  refused (Superseded) and it stands down. That is enough because every write of a pass goes
  through that fence row, whose row lock orders the writes of two would-be leaders, and the
  tokens only grow from leader to leader. Each write is also a compare-and-set on the order's
  status, so even two passes of one leader never move an order twice.
One item of a pass that fails (its row locked past DB_LOCK_TIMEOUT_MS, an answer it cannot
read) is skipped by the pass itself (order_service/settling/pages.py). Whatever fails a whole pass
(the order database down, a read-only transaction on a primary just demoted) or the election
(its backend unreachable) is logged and tried again after a wait that grows while the
failures last: nothing restarts a reconciler that
exits, and its standby would die of the same fault. It only ends when it is told to.

Lines meant for people and the standby demo: "elected", "pass", "not the leader", "refused",
each with the instance, its token and the wall time (`at=`), so a takeover can be timed.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from dataclasses import dataclass
from datetime import timedelta

import redis

from coordination.election import Elector, make_elector, serve_elected
from order_service.placing import CallPolicy, FlagWriter, StockClient
from order_service.settling.reconcile import ReconcileReport, reconcile
from order_service.storage.store import OrderStore
from order_service.storage.transitions import Fence, Superseded
from shared.config.settings import Settings
from shared.database.engines import DatabaseTimeouts, make_engine
from shared.faults import NO_FAULTS, Faults
from shared.programs import run_singleton
from shared.redis_client import make_redis

log = logging.getLogger("reconciler")
ELECTION_PATH = "/inventory/reconciler"  # ZooKeeper; etcd uses the same name as its key
# The longest wait after failures in a row (the election's backend, a pass's database): one
# RECONCILE_INTERVAL more at each, so a lasting fault is not hammered, up to this.
MAX_BACKOFF = 30.0


def serve(settings: Settings, identifier: str, stop: threading.Event) -> None:
    """Campaign, lead while sure of it, resign, campaign again; until `stop` is set
    (coordination/election.py's serve_elected: nothing restarts a reconciler that exits, so
    whatever fails is waited out)."""
    parts = Parts.of(settings, "reconciler")
    store, stock, redis_client, flags = parts.store, parts.stock, parts.redis, parts.flags
    # Fault injection (off unless FAULT_INJECTION=true): the standby demo arms a stop of the
    # leader inside its pass, in the same Redis keys as the stock service's faults.
    faults = Faults(redis_client) if settings.fault_injection else NO_FAULTS
    elector = make_elector(settings, ELECTION_PATH, identifier)
    try:
        serve_elected(
            elector,
            identifier,
            stop,
            lambda token: lead(
                settings, identifier, token, elector, store, stock, flags, faults, stop
            ),
            lambda failures: backoff(settings.reconcile_interval, failures),
            log,
        )
    finally:
        parts.close()


def backoff(interval: float, failures: int) -> float:
    """The wait after `failures` failures in a row: one interval more at each, up to
    MAX_BACKOFF (or the interval, if longer)."""
    return min(interval * failures, max(interval, MAX_BACKOFF))


def pass_once(settings: Settings, older_than: timedelta) -> ReconcileReport:
    """One pass, not elected (`inventory reconcile`, and the scenarios that settle their own
    stack): the same stock client policy and flag writer as the service's passes."""
    parts = Parts.of(settings, "reconcile")
    try:
        return reconcile(
            parts.store,
            parts.stock,
            older_than,
            flags=parts.flags,
            void_after=timedelta(seconds=settings.reconcile_void_after),
        )
    finally:
        parts.close()


@dataclass
class Parts:
    """What a pass talks to, built from the settings alike for the elected service and for one
    pass: the order store, the stock client (the patient policy: one attempt per call, the
    next pass comes back), Redis, and the writer of an undecided order's flag (written again
    before its deduction is made again)."""

    store: OrderStore
    stock: StockClient
    redis: redis.Redis
    flags: FlagWriter

    @classmethod
    def of(cls, settings: Settings, application: str) -> Parts:
        redis_client = make_redis(settings.redis_url)
        return cls(
            OrderStore(
                make_engine(
                    settings.order_database_url,
                    application=application,
                    timeouts=DatabaseTimeouts.of(settings),
                )
            ),
            StockClient(
                settings.stock_service_url,
                CallPolicy.patient(settings.stock_call_timeout),
                token=settings.stock_service_token,
            ),
            redis_client,
            FlagWriter(redis_client, settings.flag_ttl, settings.flag_write_seconds),
        )

    def close(self) -> None:
        self.stock.close()
        self.redis.close()
        self.store.engine.dispose()


def lead(
    settings: Settings,
    identifier: str,
    token: int,
    elector: Elector,
    store: OrderStore,
    stock: StockClient,
    flags: FlagWriter,
    faults: Faults,
    stop: threading.Event,
) -> None:
    failures = 0
    while not stop.is_set():
        if not elector.is_leader():
            log.warning(
                "%s not the leader any more token=%d at=%.3f", identifier, token, time.time()
            )
            return
        try:
            report = reconcile(
                store,
                stock,
                timedelta(seconds=settings.reconcile_age()),
                fence=Fence(settings.reconciler_epoch, token),
                before_write=lambda: faults.fire("reconciler_stop_before_write"),
                flags=flags,
                void_after=timedelta(seconds=settings.reconcile_void_after),
            )
        except Superseded as exc:
            log.warning("%s refused token=%d at=%.3f: %s", identifier, token, time.time(), exc)
            return
        except Exception as exc:
            # Whatever it was (the database down, a read-only transaction on a primary just
            # demoted, a statement or lock wait timeout, a bug): the next pass tries again, on
            # new connections (the old ones may still point at the demoted server), after a
            # wait that grows while the failures last. Leading goes on.
            failures += 1
            log.warning("%s pass failed token=%d at=%.3f: %r", identifier, token, time.time(), exc)
            store.engine.dispose()
            stop.wait(backoff(settings.reconcile_interval, failures))
            continue
        else:
            failures = 0
            log.info(
                "%s pass token=%d at=%.3f examined=%d confirmed=%d failed=%d cancelled=%d "
                "retried=%d unreachable=%d reservations_expired=%d backordered=%d "
                "backorders_confirmed=%d skipped=%d",
                identifier,
                token,
                time.time(),
                report.examined,
                len(report.confirmed),
                len(report.failed),
                len(report.cancelled),
                len(report.retried),
                report.unreachable,
                len(report.reservations.expired),
                len(report.backordered),
                len(report.backorders.confirmed),
                len(report.skipped + report.backorders.skipped + report.reservations.skipped),
            )
        stop.wait(settings.reconcile_interval)


def main(argv: list[str] | None = None) -> int:
    """`python -m order_service.settling.reconciler [--name NAME]`: one instance, configured by its
    environment alone, until SIGTERM or ^C (it resigns on the way out)."""
    return run_singleton("reconciler", serve, argv)


if __name__ == "__main__":
    sys.exit(main())
