"""`inventory chaos`: load on the cluster while the nemesis works through its schedule; then
heal everything, wait, reconcile, check, and write the report.

The run: a fault-free baseline, then each fault (inject, hold, heal, let it recover), the load
going on throughout and until at least `min_orders` orders were placed. After the load, a probe
order shows the healed cluster serves; then the run waits until every flag of its orders has
expired (no attempt can pass the stock service's pre-filter any more), settles what faults left
open with the reconciler, and checks.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

from inventory.chaos import checker, history, nemesis, report
from inventory.chaos.workload import Workload, make_goods
from inventory.cluster import deploy, topology
from order_service.reconcile import reconcile
from order_service.stock_client import StockClient
from order_service.store import OrderStore
from shared.db import make_engine

EXPECTED_RATE = 60  # orders/s this cluster took on this machine under the chaos load
FLAG_TTL = float(topology.SERVICE_SETTINGS["FLAG_TTL"])


class ChaosError(RuntimeError):
    """The run could not start (no cluster, unknown fault)."""


@dataclass
class ChaosConfig:
    faults: list[str]
    min_orders: int = 1000
    baseline: float = 10.0
    recover: float = 8.0  # after each heal, before the next fault
    threads: int = 16
    liveness_bound: float = 60.0
    settings: dict[str, str] = field(default_factory=dict)  # LOCK_BACKEND, FENCING for the run
    seed: int = 1
    folder: Path = Path("chaos-report")


def run_chaos(config: ChaosConfig, say: Callable[[str], None] = print) -> dict[str, Any]:
    unknown = [f for f in config.faults if f not in nemesis.FAULTS]
    if unknown:
        raise ChaosError(f"unknown faults {unknown}; known: {', '.join(nemesis.FAULTS)}")
    state = deploy.load_state()
    if state is None or not all(p.alive() for p in state.procs.values()):
        raise ChaosError("no cluster running: start one with `inventory cluster up`")
    own = dict(state.settings)
    asked = {**own, **config.settings}
    if asked != own:
        say(f"restarting the replicas with {config.settings} for this run")
        deploy.restart_services(state, asked)
    try:
        return _run(state, config, say)
    finally:
        nemesis.heal_everything(state)
        if asked != own:
            deploy.restart_services(state, own)


def _run(
    state: deploy.ClusterState, config: ChaosConfig, say: Callable[[str], None]
) -> dict[str, Any]:
    rng = random.Random(config.seed)
    # Hot goods ids sell out about three quarters into the run (demand per hot id is about a
    # quarter of the orders): contention on them lasts through the faults, and demand ends
    # above supply. The others keep confirmations coming to the end.
    schedule = config.baseline + sum(nemesis.FAULTS[f].hold + config.recover for f in config.faults)
    expected = max(config.min_orders, int(EXPECTED_RATE * schedule))
    goods = make_goods(f"cz{config.seed}{uuid.uuid4().hex[:5]}-", hot_stock=expected // 5)
    with httpx.Client(
        base_url=topology.STOCK_URL, timeout=10, headers=state.admin_headers()
    ) as client:
        for goods_id, level in goods.levels.items():
            client.put(f"/stock/{goods_id}", json={"num": level}).raise_for_status()
    lb = topology.host("lb").address
    load = Workload(lb, topology.LB_ORDER_PORT, goods, threads=config.threads, seed=config.seed)
    started = time.monotonic()
    load.start(started)
    say(
        f"load: {config.threads} buyers on {len(goods.hot)} hot and {len(goods.others)} other "
        f"goods ids; baseline {config.baseline:.0f} s"
    )
    nemesis.sleep_until(started + config.baseline)
    windows: list[report.Window] = []
    for name in config.faults:
        fault = nemesis.FAULTS[name]
        start = load.now()
        what = fault.inject(state, rng)
        say(f"{start:6.1f} s  {name}: {what}")
        nemesis.sleep_until(started + start + fault.hold)
        heal = load.now()  # recovery counts from here: restarts and rejoins are part of it
        seen = fault.heal(state)
        say(f"{load.now():6.1f} s  healed {name}" + (f": {seen}" if seen else ""))
        what = f"{what}; at the heal, {seen}" if seen else what
        nemesis.sleep_until(started + heal + config.recover)
        windows.append(report.Window(name, what, start, heal, load.now()))
    while load.orders < config.min_orders:
        time.sleep(0.5)
    load.stop()
    stopped = load.now()
    say(f"{stopped:6.1f} s  load stopped: {load.orders} orders, {len(load.ops)} sends")
    nemesis.heal_everything(state)
    deploy.wait_replicas_healthy(state)
    last_heal = windows[-1].heal if windows else config.baseline
    recovered = report.recovery(load.ops, last_heal)
    if recovered is None:  # nothing confirmed after the last heal under load: ask once more
        probe = _probe(goods.prefix, config.liveness_bound, state.admin_headers())
        recovered = None if probe is None else load.now() - last_heal
    last_invoke = max((op.invoke for op in load.ops), default=0.0)
    wait = started + last_invoke + FLAG_TTL + 2 - time.monotonic()
    if wait > 0:
        say(f"waiting {wait:.0f} s for the flags of the last orders to expire, then reconciling")
        time.sleep(wait)
    settled = _reconcile()
    say(f"reconciled: {settled}")
    order_engine = make_engine(topology.ORDER_DATABASE_URL)
    stock_engine = make_engine(topology.STOCK_DATABASE_URL)
    try:
        verdicts = checker.check_run(
            load.ops,
            order_engine,
            stock_engine,
            goods.prefix,
            goods.levels,
            checker.liveness(recovered, config.liveness_bound),
        )
    finally:
        order_engine.dispose()
        stock_engine.dispose()
    table = report.rows(load.ops, windows, config.baseline)
    summary = {
        "verdict": checker.overall(verdicts),
        "orders": load.orders,
        "sends": len(load.ops),
        "confirmed": sum(1 for o in report.final_outcomes(load.ops).values() if o == "ok"),
        "load_seconds": round(stopped, 1),
        "goods_prefix": goods.prefix,
        "settings": state.settings,
        "reconciled": settled,
        "not_available": nemesis.not_available(),
    }
    config.folder.mkdir(parents=True, exist_ok=True)
    history.write(load.ops, config.folder / "history.jsonl")
    report.write(config.folder, summary, table, verdicts, windows, load.ops)
    return {**summary, "table": table, "verdicts": verdicts}


def _probe(prefix: str, bound: float, admin: dict[str, str]) -> float | None:
    """Seconds until one new order on a fresh goods id is confirmed; None past the bound."""
    goods_id = f"{prefix}probe"
    started = time.monotonic()
    with httpx.Client(timeout=20) as client:
        while time.monotonic() - started < bound:
            try:
                client.put(
                    f"{topology.STOCK_URL}/stock/{goods_id}", json={"num": 1000}, headers=admin
                )
                answer = client.post(
                    f"{topology.ORDER_URL}/genOrder",
                    json={"userId": "probe", "items": [{"goodsId": goods_id, "num": 1}]},
                )
                if answer.status_code == 200:
                    return time.monotonic() - started
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
    return None


def _reconcile() -> dict[str, int]:
    """Passes of the reconciler until every order it looked at could be checked."""
    store = OrderStore(make_engine(topology.ORDER_DATABASE_URL))
    stock = StockClient(topology.STOCK_URL, 5, 0, 60, 0)
    try:
        for _ in range(5):
            done = reconcile(
                store, stock, timedelta(0), timedelta(days=1), timedelta(seconds=FLAG_TTL)
            )
            if not done.unreachable:
                break
            time.sleep(2)
        return {
            "examined": done.examined,
            "confirmed": len(done.confirmed),
            "failed": len(done.failed),
            "mismatched": len(done.mismatched),
            "unreachable": done.unreachable,
        }
    finally:
        stock.close()
        store.engine.dispose()
