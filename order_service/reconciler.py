"""`inventory reconciler`: reconciliation as a service, one active and many standby. Every
instance campaigns (shared/election.py); the leader runs a pass every RECONCILE_INTERVAL; the
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
A pass that fails (the order database down, say) is logged and tried again at the next
interval; the service itself only ends when it is told to.

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

from order_service.flags import FlagWriter
from order_service.reconcile import ReconcileReport, reconcile
from order_service.retry import CallPolicy
from order_service.stock_client import StockClient
from order_service.store import OrderStore
from order_service.transitions import Fence, Superseded
from shared.db import make_engine
from shared.election import Elector, make_elector
from shared.faults import NO_FAULTS, Faults
from shared.programs import run_singleton
from shared.redis_client import make_redis
from shared.settings import Settings

log = logging.getLogger("reconciler")
ELECTION_PATH = "/inventory/reconciler"  # ZooKeeper; etcd uses the same name as its key


def serve(settings: Settings, identifier: str, stop: threading.Event) -> None:
    """Campaign, lead while sure of it, resign, campaign again; until `stop` is set."""
    parts = Parts.of(settings, "reconciler")
    store, stock, redis_client, flags = parts.store, parts.stock, parts.redis, parts.flags
    # Fault injection (off unless FAULT_INJECTION=true): the standby demo arms a stop of the
    # leader inside its pass, in the same Redis keys as the stock service's faults.
    faults = Faults(redis_client) if settings.fault_injection else NO_FAULTS
    elector = make_elector(settings, ELECTION_PATH, identifier)
    log.info("%s campaigning at=%.3f", identifier, time.time())
    try:
        while not stop.is_set():
            token = elector.campaign(stop)
            if token is None:
                break
            log.warning("%s elected token=%d at=%.3f", identifier, token, time.time())
            lead(settings, identifier, token, elector, store, stock, flags, faults, stop)
            elector.resign()  # deposed, not sure, refused or stopped: hand over, stand by
    finally:
        elector.close()
        log.warning("%s resigned at=%.3f", identifier, time.time())
        parts.close()


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
            OrderStore(make_engine(settings.order_database_url, application=application)),
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
        except Exception as exc:  # the next pass tries again; leading goes on
            log.warning("%s pass failed token=%d at=%.3f: %r", identifier, token, time.time(), exc)
        else:
            log.info(
                "%s pass token=%d at=%.3f examined=%d confirmed=%d failed=%d cancelled=%d "
                "retried=%d unreachable=%d",
                identifier,
                token,
                time.time(),
                report.examined,
                len(report.confirmed),
                len(report.failed),
                len(report.cancelled),
                len(report.retried),
                report.unreachable,
            )
        stop.wait(settings.reconcile_interval)


def main(argv: list[str] | None = None) -> int:
    """`python -m order_service.reconciler [--name NAME]`: one instance, configured by its
    environment alone, until SIGTERM or ^C (it resigns on the way out)."""
    return run_singleton("reconciler", serve, argv)


if __name__ == "__main__":
    sys.exit(main())
