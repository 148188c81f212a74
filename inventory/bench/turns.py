"""One turn of a bench round: a stack's loads (reduceStock, and genOrder where the order path is
measured, and on the default stack one caller's loads) or the one-database peer's. Each load's
CPU is taken by process (tally.measured), and the batches of both services are read from their
metrics just outside that window (batches.py), so the scrapes cost the load nothing."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from inventory.bench.batches import scrape_all
from inventory.bench.config import BenchConfig, StackConfig
from inventory.bench.loads import LoadResult, order_load, reduce_calls, reduce_load, seed_goods
from inventory.bench.peer import prepare, start_peer
from inventory.bench.pg_cpu import DatabaseCpu
from inventory.bench.tally import Tally, measured
from inventory.local import stack_state
from inventory.local.servers import ServerProcess

REDUCE, ORDER = "reduceStock", "genOrder"


@dataclass
class Tallies:
    """Every load's rounds: reduceStock by (configuration, goods), genOrder by (label, goods),
    the peer by goods, and the lone loads (one caller, hot goods id) by what they call."""

    reduce: dict[tuple[StackConfig, int], Tally] = field(default_factory=dict)
    orders: dict[tuple[str, int], Tally] = field(default_factory=dict)
    peer: dict[int, Tally] = field(default_factory=dict)
    lone: dict[str, Tally] = field(default_factory=dict)


def load_into(
    tally: Tally,
    pids: dict[str, int],
    database: DatabaseCpu | None,
    run: Callable[[], LoadResult],
    urls: Mapping[str, str],
) -> None:
    """One measured load: its answers and CPU, and its batches on the services at `urls`."""
    before = scrape_all(urls)
    tally.add(*measured(pids, database, run))
    tally.batches.add(before, scrape_all(urls))


def stack_turn(
    state: stack_state.StackState,
    config: BenchConfig,
    stack_config: StackConfig,
    own: list[ServerProcess],
    database: DatabaseCpu | None,
    round_no: int,
    tallies: Tallies,
) -> None:
    goods = _seed_and_warm_up(state, config, stack_config)
    stock_only = {"stock": state.stock_url}
    both = {"order": state.order_url, "stock": state.stock_url}
    for goods_count in (1, config.spread_goods):
        tally = tallies.reduce.setdefault((stack_config, goods_count), Tally())
        calls = reduce_calls(state.redis_url, goods[goods_count], config.requests, seed=round_no)
        pids = _pids(state, own, ("stock_service",))
        run = partial(reduce_load, state, calls, config.concurrency)
        load_into(tally, pids, database, run, stock_only)
    if not stack_config.orders:
        return
    # POST /genOrder, one unit of one goods id each (the goods reduceStock used, stocked far
    # above any run's demand: every order confirmed).
    pids = _pids(state, own, ("stock_service", "order_service"))
    for goods_count in (1, config.spread_goods):
        tally = tallies.orders.setdefault((stack_config.label, goods_count), Tally())
        run = partial(
            order_load, state.order_url, goods[goods_count], config.requests, config.concurrency
        )
        load_into(tally, pids, database, run, both)
    if config.lone_requests and stack_config == StackConfig("zookeeper"):
        # One caller: every batch on either side has one member, so this is what a lone
        # request costs each process, the yardstick of a member's share in the loads above.
        calls = reduce_calls(state.redis_url, goods[1], config.lone_requests, seed=round_no)
        run = partial(reduce_load, state, calls, 1)
        stock_pids = _pids(state, own, ("stock_service",))
        load_into(tallies.lone.setdefault(REDUCE, Tally()), stock_pids, database, run, stock_only)
        run = partial(order_load, state.order_url, goods[1], config.lone_requests, 1)
        load_into(tallies.lone.setdefault(ORDER, Tally()), pids, database, run, both)


def peer_turn(
    home: Path,
    config: BenchConfig,
    env: dict[str, str],
    database: DatabaseCpu | None,
    round_no: int,
    tallies: dict[int, Tally],
) -> None:
    """The one-database peer's turn: its tables in the bench's database (SQLite: a file of this
    round's, as each stack's are), its goods stocked, gunicorn started and warmed up with a
    short load over all of them, then the genOrder loads, CPU by process (the peer's gunicorn
    and its workers, PostgreSQL's backends of the bench's database, the client alone)."""
    folder = home / f"r{round_no}-peer"
    folder.mkdir(parents=True, exist_ok=True)
    url = env.get("STOCK_DATABASE_URL") or f"sqlite:///{folder / 'peer.db'}"
    goods = {
        1: ["bench-peer-hot-0"],
        config.spread_goods: [f"bench-peer-spread-{i}" for i in range(config.spread_goods)],
    }
    everything = goods[1] + goods[config.spread_goods]
    prepare(url, dict.fromkeys(everything, 100_000_000))
    peer = start_peer(folder, url)
    try:
        order_load(peer.url, everything, max(2 * len(everything), 64), config.concurrency)
        for goods_count in (1, config.spread_goods):
            pids = {"peer": peer.pid, "load": os.getpid()}
            run = partial(
                order_load, peer.url, goods[goods_count], config.requests, config.concurrency
            )
            # The peer has no batches and no /metrics: nothing to scrape.
            load_into(tallies.setdefault(goods_count, Tally()), pids, database, run, {})
    finally:
        peer.stop()


def _seed_and_warm_up(
    state: stack_state.StackState, config: BenchConfig, stack_config: StackConfig
) -> dict[int, list[str]]:
    """The goods of each load, the same ids in every round (a catalogue's lock paths and lock
    rows outlive any one run, so their first use is not measured), and a short load over all
    of them first: connection pools, compiled statements, the lock paths known to exist."""
    prefix = "bench-" + stack_config.label.replace("/", "-").replace(" ", "-")
    goods = {
        1: seed_goods(state, 1, f"{prefix}-hot-"),
        config.spread_goods: seed_goods(state, config.spread_goods, f"{prefix}-spread-"),
    }
    everything = goods[1] + goods[config.spread_goods]
    calls = reduce_calls(state.redis_url, everything, max(2 * len(everything), 64), seed=0)
    reduce_load(state, calls, config.concurrency)
    if stack_config.orders:  # the order path is measured on it: warm it
        order_load(state.order_url, everything, max(2 * len(everything), 64), config.concurrency)
    return goods


def _pids(
    state: stack_state.StackState, own: list[ServerProcess], services: tuple[str, ...]
) -> dict[str, int]:
    pids = {name: state.pids[name] for name in services}
    pids.update({server.name: server.pid for server in own})
    pids["load"] = os.getpid()
    return pids
