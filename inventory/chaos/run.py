"""`inventory chaos`: load on the cluster while the nemesis works through its schedule; then
heal everything, wait for the cluster to settle every order by itself, check, and write the
report.

The run: a fault-free baseline, then each fault (inject, hold, heal, let it recover), the load
going on throughout and until at least `min_orders` orders were placed. After the load, a probe
order shows the healed cluster serves; then the run only watches: the cluster's own elected
reconcilers (two, on the order hosts) settle what the faults left PENDING, and the run fails if
an order is still PENDING `SETTLE_BOUND` seconds after the load ended. Nothing is settled by
the run itself. Beside the buyers: an operator adjusts levels (restocks.py), a consumer reads
the stock events through the faults (stream_consumer.py): stock_side.py; a reserver holds carts
(reservations.py); a receiver of webhooks on a host of the cluster gets the stock events from
the cluster's deliverers (webhooks/). Each order and stock host runs on a clock of its own
(clocks.py). Then the checks: checker.py, stock_side.py, backorder_checks.py, buyer_limits.py,
W1 (webhooks/check.py).
"""

from __future__ import annotations

import random
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from inventory.chaos import (
    backorder_checks,
    buyer_limits,
    checker,
    clocks,
    ha_faults,
    history,
    intruder,
    late_attempts,
    locations,
    nemesis,
    report,
    reservations,
    slow_attempts,
    stall_check,
    stalled_lock,
)
from inventory.chaos.settlement import wait_for_settlement
from inventory.chaos.stock_side import StockSide
from inventory.chaos.webhooks import subscriber as webhook_receiver
from inventory.chaos.webhooks.subscriber import WebhookSide, subscribed
from inventory.chaos.workload import NORMAL, Workload, make_goods
from inventory.cluster import deploy, pg_ha, skew, topology
from shared.database.engines import make_engine, utcnow

# Orders/s this cluster takes on this machine under the chaos load: 24.5 in the last full run
# (10,005 orders in 409 s, the stock side running), 16 in a quick run beside a benchmark.
EXPECTED_RATE = 25


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
    settle_bound: float = topology.SETTLE_BOUND
    settings: dict[str, str] = field(default_factory=dict)  # LOCK_BACKEND, FENCING for the run
    seed: int = 1
    folder: Path = Path("chaos-report")
    skew: bool = True  # each order and stock host on its own clock (clocks.py)


def run_chaos(config: ChaosConfig, say: Callable[[str], None] = print) -> dict[str, Any]:
    unknown = [f for f in config.faults if f not in nemesis.FAULTS]
    if unknown:
        raise ChaosError(f"unknown faults {unknown}; known: {', '.join(nemesis.FAULTS)}")
    state = deploy.load_state()
    if state is not None:
        webhook_receiver.forget(state)  # a run killed outright left it: not the cluster's
    if state is None or not all(p.alive() for p in state.procs.values()):
        raise ChaosError("no cluster running: start one with `inventory cluster up`")
    try:
        offsets = clocks.offsets_for(config.skew, config.seed)
    except skew.SkewError as exc:  # libfaketime missing: the message names the package
        raise ChaosError(str(exc)) from exc
    with clocks.as_the_run_asks(state, config.settings, config.faults, offsets, say) as told:
        return _run(state, config, say, told)


def _run(
    state: deploy.ClusterState,
    config: ChaosConfig,
    say: Callable[[str], None],
    told: dict[str, Any],
) -> dict[str, Any]:
    rng = random.Random(config.seed)
    # Hot goods ids sell out about halfway through the run at the expected rate (demand per
    # hot id is about 0.3 units an order; a stock of an eighth of the orders), and still before
    # its end at half that rate: contention on them lasts through the faults, refusals come
    # (I4, I9, H2 judge them), and the operator's restocks bring units back to buyers told no
    # (stock_side.py). The others keep confirmations coming to the end. (With a fifth and 60
    # orders/s expected, a full run at 24.5/s never sold them out: no refusal to judge.)
    schedule = config.baseline + sum(nemesis.FAULTS[f].hold + config.recover for f in config.faults)
    expected = max(config.min_orders, int(EXPECTED_RATE * schedule))
    # Scarce goods only for a fault that asks the buyers for them (slow-first-attempts).
    scarce = 3 if any(nemesis.FAULTS[f].demand for f in config.faults) else 0
    goods = make_goods(
        f"cz{config.seed}{uuid.uuid4().hex[:5]}-", hot_stock=expected // 8, scarce=scarce
    )
    side = StockSide(state, goods, config.seed)
    hooks = WebhookSide(state, goods.prefix, subscribed(goods))
    try:
        return _under_load(state, config, say, rng, goods, side, hooks, told)
    finally:
        side.close()
        hooks.close()


def _under_load(
    state: deploy.ClusterState,
    config: ChaosConfig,
    say: Callable[[str], None],
    rng: random.Random,
    goods: Any,
    side: StockSide,
    hooks: WebhookSide,
    told: dict[str, Any],
) -> dict[str, Any]:
    hooks.open()  # the receiver and its subscription: it sees what the run writes from here
    side.open()  # the events' consumer, then the seeds
    admin = state.admin_headers()
    with httpx.Client(base_url=topology.ORDER_URL, timeout=10, headers=admin) as client:
        buyer_limits.set_up(client, goods.limited)  # seeded above: now each one's limit
    load = Workload(
        topology.VIP, topology.LB_ORDER_PORT, goods, threads=config.threads, seed=config.seed
    )
    ha_faults.attempts.clear()
    slow_attempts.held.clear()
    slow_attempts.scarce[:] = list(goods.scarce)  # the story empties and stocks them
    stalled_lock.begin(list(goods.hot))  # stall-lock-holder holds one's lock
    started = time.monotonic()
    wall_start = utcnow()  # the run's second 0 on the databases' clock (the same machine's)
    load.start(started)
    side.start_keeper(load)
    reserver = reservations.started(list(goods.reserved), goods.prefix, load, config.seed)
    say(
        f"load: {config.threads} buyers on {len(goods.hot)} hot and {len(goods.others)} other "
        f"goods ids"
        + (f" ({len(goods.scarce)} scarce ones for a fault's demand)" if goods.scarce else "")
        + f"; baseline {config.baseline:.0f} s"
    )
    nemesis.sleep_until(started + config.baseline)
    windows: list[report.Window] = []
    for name in config.faults:
        fault = nemesis.FAULTS[name]
        start = load.now()
        if fault.demand:
            load.demand = fault.demand
        what = fault.inject(state, rng)
        say(f"{start:6.1f} s  {name}: {what}")
        nemesis.sleep_until(started + start + fault.hold)
        heal = load.now()  # recovery counts from here: restarts and rejoins are part of it
        ha_faults.timing.clear()
        seen = fault.heal(state)
        load.demand = NORMAL
        say(f"{load.now():6.1f} s  healed {name}" + (f": {seen}" if seen else ""))
        what = f"{what}; at the heal, {seen}" if seen else what
        nemesis.sleep_until(started + heal + config.recover)
        window = report.Window(name, what, start, heal, load.now(), **ha_faults.timing)
        windows.append(window)
    while load.orders < config.min_orders:
        time.sleep(0.5)
    load.stop()
    side.stop_keeper()
    reserver.stop()
    stopped = load.now()
    say(f"{stopped:6.1f} s  load stopped: {load.orders} orders, {len(load.ops)} sends")
    nemesis.heal_everything(state)
    deploy.wait_replicas_healthy(state)
    last_heal = windows[-1].heal if windows else config.baseline
    recovered = report.recovery(load.ops, last_heal)
    if recovered is None:  # nothing confirmed after the last heal under load: ask once more
        probe = _probe(goods.prefix, config.liveness_bound, state.admin_headers())
        recovered = None if probe is None else load.now() - last_heal
    # The checker reads as the operator: the superuser, on the primary, from the bridge.
    order_engine = make_engine(pg_ha.operator_url("orders", state.secrets))
    stock_engine = make_engine(pg_ha.operator_url("stock", state.secrets))
    try:
        say(
            f"{load.now():6.1f} s  waiting for the cluster's reconcilers to settle every order "
            f"(bound {config.settle_bound:.0f} s after the load)"
        )
        settled = wait_for_settlement(
            order_engine, goods.prefix, started + stopped, config.settle_bound
        )
        say(f"{load.now():6.1f} s  {settled.describe()}")
        lost: dict[str, str] = {}
        placed: dict[str, Any] = {}  # the located goods' figures (location_checks.py)
        owed: dict[str, Any] = {}  # the backorders' and reservations' (backorder_checks.py)
        verdicts = checker.check_run(
            load.ops,
            order_engine,
            stock_engine,
            goods.prefix,
            goods.levels,
            checker.liveness(recovered, config.liveness_bound),
            checker.settled_by_the_cluster(settled),
            lost,
            locations.places() if goods.located else None,
            placed,
        )
        if "intruder" in config.faults:
            verdicts.append(intruder.verdict(ha_faults.attempts))
        late_figures: list[dict[str, Any]] = []
        slow_windows = [w for w in windows if w.name == "slow-first-attempts"]
        for w, held in zip(slow_windows, slow_attempts.held, strict=False):
            verdict, numbers = late_attempts.count_story(
                load.ops,
                w.start,
                w.heal,
                wall_start,
                list(goods.scarce),
                goods.levels,
                stock_engine,
                order_engine,
                held,
            )
            verdicts.append(verdict)
            late_figures.append(numbers)
        stall_figures = stall_check.judge(load.ops, started, config.baseline, verdicts, windows)
        say(f"{load.now():6.1f} s  checking the adjustments and the stock events the consumer got")
        verdicts += side.check(stock_engine)
        say(f"{load.now():6.1f} s  checking the webhooks the receiver got (W1)")
        verdicts.append(hooks.check(stock_engine))
        if goods.located:
            say(f"{load.now():6.1f} s  {_locations_said(placed, side.summary()['transfers'])}")
        verdicts += backorder_checks.judge(order_engine, stock_engine, reserver, owed)
        verdicts += buyer_limits.judge(order_engine, load.ops, goods.limited)
        verdicts += clocks.verdicts(told)
        say(f"{load.now():6.1f} s  {backorder_checks.said(owed)}")
    finally:
        order_engine.dispose()
        stock_engine.dispose()
    table = report.rows(load.ops, windows, config.baseline, lost)
    summary = {
        "verdict": checker.overall(verdicts),
        "orders": load.orders,
        "sends": len(load.ops),
        "confirmed": sum(1 for o in report.final_outcomes(load.ops).values() if o == "ok"),
        "load_seconds": round(stopped, 1),
        "goods_prefix": goods.prefix,
        # The replicas' settings, the admin token left out: a report is meant to be shared.
        "settings": {k: v for k, v in state.settings.items() if k != "ADMIN_TOKEN"},
        "settlement": settled.as_json(),
        # by cause; per window in the table, but for those no answer named
        "lost_sales": dict(Counter(lost.values())),
        "lost_sales_unattributed": report.unattributed_lost(load.ops, lost),
        "not_available": nemesis.not_available(),
        **side.summary(),
        **hooks.summary(),
        "located_orders": placed.get("orders", {}),
        "split_lines": placed.get("splits"),
        **owed,  # backorders and reservations: backorder_checks.py
        "buyer_limits": buyer_limits.figures(load.ops, goods.limited),
        **told,  # each host's clock: clocks.py
    }
    if "intruder" in config.faults:
        summary["intruder"] = intruder.summary(ha_faults.attempts)
    if late_figures:
        summary["late_attempts"] = late_figures
    if stall_figures:
        summary["stalled_lock"] = stall_figures
    config.folder.mkdir(parents=True, exist_ok=True)
    history.write(load.ops, config.folder / "history.jsonl")
    side.write(config.folder)
    history.write(reserver.steps, config.folder / "reservations.jsonl")
    report.write(config.folder, summary, table, verdicts, windows, load.ops)
    return {**summary, "table": table, "verdicts": verdicts}


def _locations_said(placed: dict[str, Any], moved: dict[str, Any]) -> str:
    orders = placed.get("orders", {})
    return (
        f"locations: transfers {moved['sent']} sent, {moved['received']} received, "
        f"{moved['cancelled']} cancelled, {moved['in_transit']} in transit ({moved['requests']} "
        f"requests: {moved['repeats']} repeats, {moved['retries']} retries); orders naming a "
        f"location {orders.get('named', 0)}, partial {orders.get('partial', 0)} "
        f"({orders.get('partly_filled', 0)} partly filled, {orders.get('partial_refused', 0)} "
        f"refused); {placed.get('splits', 0)} lines split across locations"
    )


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
