"""The code paths of each cluster identity, run by the identities check against real servers
laid out as the cluster lays them out (tests/integration/test_identities.py).

Each program gets its settings as `cluster up` gives them (nodes.base_env, Secrets.env_for:
the same login names and passwords), only pointed at this test's servers, so it is the
program's own identity that calls. Each then runs what it runs in the cluster, through the
program's own functions: the order service's flag writes, the removal of a rejected order's
flag and its health check; the reconciler's pass (Parts.of, reconcile with its fence and its
flag writer); the stock service's pre-filter (single and batched), the forgetting of decided
flags, its health check, the Redis lock (`cluster up --lock redis`) with the watchdog's renewal,
and the fault points of a chaos run (FAULT_INJECTION); the relay's round (publish_pending with
the cluster's STOCK_EVENTS_MIN_REPLICAS); the chaos run's consumer of the stock events; the
ZooKeeper lock and the two elections. A refusal ends a step, not the run: the check reads the
servers' own record of it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any, cast
from urllib.parse import urlsplit

import redis
from sqlalchemy import Engine, insert

from coordination.election import make_elector
from coordination.locks.factory import make_lock_backend
from inventory.chaos.stream_consumer import StreamConsumer
from inventory.cluster import nodes, topology
from inventory.cluster.secrets import Secrets
from order_service.placing.answers import StockAnswer, StockDecision
from order_service.placing.flags import FlagWriter
from order_service.placing.flow import OrderFlow
from order_service.settling import reconcile as reconciling
from order_service.settling import reconciler
from order_service.storage.tables import (
    hold_release,
    order_details,
    orders,
    reservation_lines,
    reservations,
)
from order_service.storage.transitions import Fence
from shared.config.settings import Settings
from shared.contract import Decided, Outcome
from shared.errors import DependencyUnavailable
from shared.faults import Faults
from shared.ids import new_id
from shared.redis_client import make_redis
from shared.web.health import redis_ok
from stock_service.deduction.steps import StockDeduction
from stock_service.ledger import relay
from stock_service.storage.tables import stock_outbox


@contextlib.contextmanager
def refusable() -> Iterator[None]:
    """A step the server refused: the check reads the refusal from the server itself."""
    with contextlib.suppress(redis.RedisError, DependencyUnavailable):
        yield


def program_settings(
    role: str, secrets: Secrets, redis_port: int, zk_hosts: str, pg_url: Any, **extra: str
) -> Settings:
    """`role`'s settings as the cluster starts it, its servers' addresses replaced by this
    test's: `pg_url(role, database)` the throwaway database for the login the cluster gives."""
    env = {**nodes.base_env(dict(extra)), **secrets.env_for(role), "ZK_HOSTS": zk_hosts}
    if role == "relay":
        env.update(topology.RELAY_SETTINGS)
    for key in ("ORDER_DATABASE_URL", "STOCK_DATABASE_URL"):
        if key in env:
            url = urlsplit(env[key])
            env[key] = pg_url(url.username, url.path.strip("/"))
    env["REDIS_URL"] = direct_redis(env["REDIS_URL"], redis_port)
    return Settings.from_env(env)


def direct_redis(url: str, port: int) -> str:
    """The same login, to this test's Redis instead of through the cluster's sentinels."""
    parts = urlsplit(url)
    return f"redis://{parts.username}:{parts.password}@127.0.0.1:{port}/0"


# --- Redis -----------------------------------------------------------------------------------


def order_service(settings: Settings) -> None:
    client = make_redis(settings.redis_url)
    with refusable():
        FlagWriter(client, settings.flag_ttl, 0.5).write([new_id(), new_id()])
    flow = cast(Any, OrderFlow.__new__(OrderFlow))  # undo_rejected needs its store and Redis
    flow.store, flow.redis = _RejectedOrders(), client
    with refusable():
        flow.undo_rejected(new_id(), StockAnswer("rejected", 404, {"goodsIds": ["g"]}))
    redis_ok(client)
    client.close()


class _RejectedOrders:
    """The order database's side of undo_rejected (the PostgreSQL check runs the writes)."""

    @contextlib.contextmanager
    def writing(self) -> Iterator[Any]:
        yield SimpleNamespace(remove_pending=lambda _order_id: True)


def stock_service(settings: Settings) -> None:
    client = make_redis(settings.redis_url)
    prefilter = cast(Any, SimpleNamespace(redis=client))
    flags = [new_id(), new_id()]
    for step in (
        lambda: StockDeduction.flag_live(prefilter, flags[0]),
        lambda: StockDeduction.flags_live(prefilter, flags),
        lambda: StockDeduction.forget_flags(prefilter, flags),
        lambda: redis_ok(client),
    ):
        with refusable():
            step()
    faults = Faults(client)  # a chaos run's FAULT_INJECTION: armed, taken, acted out
    with refusable():
        faults.arm("pair_after_read", 0.01, 1)
        faults.fire("pair_after_read")
        faults._leave_pid()
    locks = cast(Any, make_lock_backend(settings, cast(Engine, None), client))
    with refusable(), locks.hold([f"g-{new_id()}"], 2.0):
        for entry in list(locks._held):
            locks._renew(entry)  # the watchdog's renewal, without waiting a third of the TTL
    locks.close()
    client.close()


def relay_round(settings: Settings, owner: Engine, engine: Engine, prefix: str) -> set[int]:
    """Outbox rows (written as the stock service would, as its owner), then one round."""
    now = datetime.now(UTC).replace(tzinfo=None)
    row = {"seq": 1, "kind": "adjusted", "delta": 5, "level": 5, "created_at": now}
    with owner.begin() as conn:
        found = conn.execute(
            insert(stock_outbox).returning(stock_outbox.c.id),
            [{**row, "goods_id": f"{prefix}-{i}"} for i in range(3)],
        )
        ids = {int(r.id) for r in found}
    client = make_redis(settings.redis_url)
    # Rounds until one publishes, as the relay tries again after a failed round: on a loaded
    # machine the replica may not answer the round's WAIT probe (100 ms) in time, and the
    # round then sends nothing (NotReplicated) and leaves the rows for the next.
    for _attempt in range(10):
        with refusable():
            if relay.publish_pending(
                engine,
                client,
                settings.stock_events_stream,
                settings.stock_events_maxlen,
                min_replicas=settings.stock_events_min_replicas,
            ):
                break
        time.sleep(0.2)
    client.close()
    return ids


def events_consumer(url: str, prefix: str) -> StreamConsumer:
    consumer = StreamConsumer(url, topology.EVENTS_STREAM, group=f"check-{prefix}", prefix=prefix)
    with refusable():
        consumer.open()
    return consumer


def events_read(consumer: StreamConsumer, ids: set[int]) -> None:
    consumer.start()
    consumer.wait_for(ids, 5.0)
    consumer.stop()


# --- the reconciler's pass (PostgreSQL and Redis) --------------------------------------------


class _Stock:
    """The stock service's answers (HTTP is not an identity of the cluster's stores): an
    undecided order, deducted again, then voided; a cancel's return; a hold's release."""

    def __init__(self, partial: str = "", backorder: str = "") -> None:
        self.asked: set[str] = set()
        self.partial = partial  # a partial order's flag, decided deducted: 1 of its 2 units
        self.backorder = backorder  # a backorder's: 1 unit on hand, the other owed and filled

    def decision(self, flag: str) -> StockDecision:
        if flag == self.partial:
            flows = [{"goodsId": "g", "num": 1}]
            where = [{"goodsId": "g", "location": "north", "num": 1}]
            return StockDecision(Decided.DEDUCTED, flows, {"allocations": where})
        if flag == self.backorder:
            flows = [{"goodsId": "g", "num": 1}]
            line = {"goodsId": "g", "wanted": 1, "filled": 1, "state": "filled"}
            body = {"decision": Decided.DEDUCTED, "flows": flows, "backorders": [line]}
            return StockDecision(Decided.DEDUCTED, flows, body)
        seen = flag in self.asked
        self.asked.add(flag)
        return StockDecision(Decided.VOIDED if seen else None, [])

    def reduce_stock(self, flag: str, lines: dict[str, int], hold: bool = False) -> StockAnswer:
        return StockAnswer(Outcome.DEDUCTED, 200)

    def void(self, flag: str) -> StockDecision:
        return StockDecision(Decided.VOIDED, [])

    def return_stock(self, flag: str) -> StockDecision:
        return StockDecision(Outcome.RETURNED, [])

    def release_hold(self, flag: str) -> bool:
        return True


def seed_orders(owner: Engine, settings: Settings) -> tuple[str, str]:
    """One order of each kind a pass settles, written as the order service's role: PENDING
    past the reconciler's age (and within RECONCILE_VOID_AFTER: deducted again), CANCELLING,
    a hold past its deadline, and a paid hold whose release is still to send; and a
    reservation of each kind a pass settles: pending past the same age (its flag voided:
    failed), held past its expiry (expired, its units returned); a PENDING partial order
    whose flag was deducted, confirmed with what each line filled and where; and a
    BACKORDERED order whose line owed was filled since, confirmed with its units (the ids of
    these two returned)."""
    now = datetime.now(UTC).replace(tzinfo=None)
    old = now - timedelta(seconds=settings.reconcile_age() + 5)
    ids = [new_id() for _ in range(4)]
    statuses = ("PENDING", "CANCELLING", "AWAITING_PAYMENT", "CONFIRMED")
    rows = [
        {"id": i, "user_id": "u", "status": s, "created_at": old, "updated_at": old}
        | {"pay_deadline": now - timedelta(seconds=1) if s == "AWAITING_PAYMENT" else None}
        for i, s in zip(ids, statuses, strict=True)
    ]
    with owner.begin() as conn:
        conn.execute(insert(orders), rows)
        conn.execute(
            insert(order_details),
            [{"id": new_id(), "order_id": i, "goods_id": "g", "goods_num": 1} for i in ids],
        )
        conn.execute(insert(hold_release), [{"order_id": ids[3], "created_at": old}])
        partial = new_id()
        conn.execute(
            insert(orders),
            [
                {"id": partial, "user_id": "u", "status": "PENDING", "fill_mode": "partial"}
                | {"created_at": old, "updated_at": old}
            ],
        )
        backorder = new_id()
        conn.execute(
            insert(orders),
            [
                {"id": backorder, "user_id": "u", "status": "BACKORDERED"}
                | {"fill_mode": "backorder", "created_at": old, "updated_at": old}
            ],
        )
        conn.execute(
            insert(order_details),
            [
                {"id": new_id(), "order_id": partial, "goods_id": "g", "goods_num": 2}
                | {"filled": None},
                {"id": new_id(), "order_id": backorder, "goods_id": "g", "goods_num": 2}
                | {"filled": 1},
            ],
        )
        held = {"state": "held", "expires_at": now - timedelta(seconds=1)}
        kinds: list[dict[str, Any]] = [{"state": "pending", "expires_at": None}, held]
        kept = [
            {"id": new_id(), "ttl_seconds": 60, "created_at": old, "updated_at": old} | k
            for k in kinds
        ]
        conn.execute(insert(reservations), kept)
        conn.execute(
            insert(reservation_lines),
            [{"reservation_id": r["id"], "goods_id": "g", "num": 1} for r in kept],
        )
    return partial, backorder


def reconciler_pass(settings: Settings, owner: Engine, capture: Any) -> Any:
    """One pass of the elected reconciler, built as reconciler.serve builds it."""
    partial, backorder = seed_orders(owner, settings)
    parts = reconciler.Parts.of(settings, "reconciler")
    watched = capture(parts.store.engine)
    with watched.refusals():
        reconciling.reconcile(
            parts.store,
            cast(Any, _Stock(partial, backorder)),
            timedelta(seconds=settings.reconcile_age()),
            fence=Fence(settings.reconciler_epoch, 1),
            flags=parts.flags,
            void_after=timedelta(seconds=settings.reconcile_void_after),
        )
    parts.close()
    return watched


# --- ZooKeeper -------------------------------------------------------------------------------


def zookeeper_calls(settings: dict[str, Settings]) -> None:
    """The stock service's lock on two goods ids (one transaction each way), and both
    elections: campaign, the leader's question, resignation. A campaign that is refused keeps
    trying, as the program does, until a second has passed."""
    locks = make_lock_backend(settings["stock"], cast(Engine, None), cast(Any, None))
    with contextlib.suppress(DependencyUnavailable), locks.hold([new_id(), new_id()], 2.0):
        pass
    locks.close()
    for role, path in (("reconciler", reconciler.ELECTION_PATH), ("relay", relay.ELECTION_PATH)):
        elector = make_elector(settings[role], path, f"check-{role}")
        stop = threading.Event()
        timer = threading.Timer(1.0, stop.set)
        timer.start()
        if elector.campaign(stop) is not None:
            elector.is_leader()
        timer.cancel()
        elector.close()
