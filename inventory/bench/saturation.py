"""The hot goods id at 16, 64 and 256 callers: POST /genOrder on the flow's stack and on the
one-database peer, and PUT /reduceStock on the flow's stack, in one run, the turns rotated
from round to round so a shared machine's drift falls on every side alike. Each side's best
rate over the caller counts (loads with at most 1% errors) is its saturation; the flow / peer
ratio there is printed beside the one at 16 callers.

With `--code NAME=PATH` (repeatable) the flow's stack runs the code of each checkout in turn
(its services started with PYTHONPATH=PATH, so the same bench compares the code before a
change with the code after it, side by side): each side's lock holds per second and their
length come from the stock service's metrics, and so the idle time between one hold's end and
the next hold's start on the hot goods id: the wall time less the holds' time, per hold.

    python -m inventory.bench.saturation --database-url postgresql+psycopg://... \\
        --code before=/tmp/old --code after=/tmp/new --rounds 2

Run it from a folder outside the checkouts: a service started with `python -m` puts the
current folder first on its path.
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from inventory.bench.batches import Histogram, scrape
from inventory.bench.loads import LoadResult, order_load, reduce_calls, reduce_load, seed_goods
from inventory.bench.peer import prepare, start_peer
from inventory.bench.pg_cpu import DatabaseCpu
from inventory.bench.tally import measured, percentile_ms
from inventory.local import stack
from inventory.local.homes import temporary_home
from inventory.local.servers import ServerProcess, start_redis, start_zookeeper

CALLERS = (16, 64, 256)
PEER = "peer"
HOLDS, HOLD_TIME = "deduct_batch_size", "lock_hold_seconds"


@dataclass
class Cell:
    """One (side, call, callers) over the rounds."""

    rates: list[float] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    requests: int = 0
    errors: int = 0
    cpu: dict[str, float] = field(default_factory=dict)
    wall: float = 0.0
    holds: Histogram = field(default_factory=Histogram)
    hold_time: Histogram = field(default_factory=Histogram)

    def add(self, result: LoadResult, cpu: dict[str, float]) -> None:
        self.rates.append(result.run.per_second)
        self.latencies += result.latencies
        self.requests += len(result.run.answers)
        self.errors += len(result.run.answers) - result.ok
        self.wall += result.run.elapsed
        for name, seconds in cpu.items():
            self.cpu[name] = self.cpu.get(name, 0.0) + seconds

    @property
    def rate(self) -> float:
        return statistics.median(self.rates) if self.rates else 0.0

    @property
    def counts(self) -> bool:
        return self.requests > 0 and self.errors <= self.requests / 100

    def cpu_ms(self, process: str) -> float:
        return self.cpu.get(process, 0.0) * 1000 / max(self.requests - self.errors, 1)

    def gap_ms(self) -> float | None:
        """Mean time per hold that no hold ran: the load's wall time less its holds' time,
        divided by the holds (the release, the hand-off and the next claim)."""
        if not self.holds.count:
            return None
        return (self.wall - self.hold_time.sum) * 1000 / self.holds.count


Cells = dict[tuple[str, str, int], Cell]


def run(
    codes: dict[str, str | None],
    callers: tuple[int, ...],
    rounds: int,
    requests: int,
    database_url: str | None,
    say: Callable[[str], object] = print,
) -> Cells:
    import migrations
    from inventory.bench.runner import throwaway_database

    cells: Cells = {}
    with temporary_home("saturation", keep=False, say=say) as home:
        own: list[ServerProcess] = [start_zookeeper(home / "zk"), start_redis(home / "redis")]
        env = {"ZK_HOSTS": own[0].address, "REDIS_URL": f"redis://{own[1].address}/0"}
        drop, database = None, None
        try:
            if database_url:
                url, drop = throwaway_database(database_url)
                env["ORDER_DATABASE_URL"] = env["STOCK_DATABASE_URL"] = url
                migrations.upgrade(url, "order")
                migrations.upgrade(url, "stock")
                database, _ = DatabaseCpu.of(url)
            turns = [*codes, PEER]
            for round_no in range(rounds):
                shift = round_no % len(turns)
                for side in turns[shift:] + turns[:shift]:
                    say(f"round {round_no + 1} of {rounds}: {side} ...")
                    folder = home / f"r{round_no}-{side}"
                    if side == PEER:
                        _peer_turn(folder, env, database, callers, requests, cells)
                    else:
                        turn = partial(_flow_turn, folder, env, codes[side], side)
                        turn(own, database, callers, requests, round_no, cells)
        finally:
            if database is not None:
                database.close()
            for server in own:
                server.stop()
            if drop:
                drop()
    return cells


def _flow_turn(
    folder: Path,
    env: dict[str, str],
    code: str | None,
    side: str,
    own: list[ServerProcess],
    database: DatabaseCpu | None,
    callers: tuple[int, ...],
    requests: int,
    round_no: int,
    cells: Cells,
) -> None:
    extra = {**env, "LOCK_BACKEND": "zookeeper", "DEDUCT_BATCH_MAX": "32"}
    if code:
        extra["PYTHONPATH"] = code
    state = stack.up(home=folder, extra_env=extra, say=lambda *_: None)
    try:
        [hot] = seed_goods(state, 1, "saturation-hot-")
        order_load(state.order_url, [hot], 64, 16)  # warm: pools, statements, the lock path
        pids = {name: state.pids[name] for name in ("order_service", "stock_service")}
        pids.update({server.name: server.pid for server in own})
        pids["load"] = os.getpid()
        for n in callers:
            calls = reduce_calls(state.redis_url, [hot], requests, seed=round_no)
            loads = {
                "reduceStock": partial(reduce_load, state, calls, n),
                "genOrder": partial(order_load, state.order_url, [hot], requests, n),
            }
            for call, load in loads.items():
                cell = cells.setdefault((side, call, n), Cell())
                before = scrape(state.stock_url)
                cell.add(*measured(pids, database, load))
                after = scrape(state.stock_url)
                for name in (HOLDS, HOLD_TIME):
                    delta = after.get(name, Histogram()) - before.get(name, Histogram())
                    if name == HOLDS:
                        cell.holds = Histogram(
                            cell.holds.sum + delta.sum, cell.holds.count + delta.count
                        )
                    else:
                        cell.hold_time = Histogram(
                            cell.hold_time.sum + delta.sum, cell.hold_time.count + delta.count
                        )
    finally:
        stack.down(home=folder, say=lambda *_: None)


def _peer_turn(
    folder: Path,
    env: dict[str, str],
    database: DatabaseCpu | None,
    callers: tuple[int, ...],
    requests: int,
    cells: Cells,
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    url = env.get("STOCK_DATABASE_URL") or f"sqlite:///{folder / 'peer.db'}"
    hot = "saturation-peer-hot"
    prepare(url, {hot: 100_000_000})
    peer = start_peer(folder, url)
    try:
        order_load(peer.url, [hot], 64, 16)
        pids = {"peer": peer.pid, "load": os.getpid()}
        for n in callers:
            load = partial(order_load, peer.url, [hot], requests, n)
            cells.setdefault((PEER, "genOrder", n), Cell()).add(*measured(pids, database, load))
    finally:
        peer.stop()


def report(cells: Cells, callers: tuple[int, ...], say: Callable[[str], object] = print) -> None:
    say("side | call | callers | per s (rounds) | p50 / p99 ms | errors | CPU ms per request")
    for (side, call, n), c in sorted(cells.items(), key=lambda kv: (kv[0][1], kv[0][0], kv[0][2])):
        cpu = ", ".join(f"{k} {c.cpu_ms(k):.2f}" for k in sorted(c.cpu) if c.cpu_ms(k) >= 0.005)
        holds = ""
        if c.holds.count:
            holds = (
                f" | {c.requests / c.holds.count:.1f} per hold, hold "
                f"{c.hold_time.sum * 1000 / c.holds.count:.1f} ms, gap {c.gap_ms():.1f} ms"
            )
        rates = "/".join(f"{r:.0f}" for r in c.rates)
        say(
            f"{side} | {call} | {n} | {c.rate:.0f} ({rates}) | "
            f"{percentile_ms(c.latencies, 50)} / {percentile_ms(c.latencies, 99)} | "
            f"{c.errors} | {cpu}{holds}"
        )
    sides = sorted({s for s, call, _ in cells if call == "genOrder" and s != PEER})
    peer_best = _best(cells, PEER, callers)
    for side in sides:
        best = _best(cells, side, callers)
        if best is None or peer_best is None:
            continue
        at16 = (
            cells[(side, "genOrder", callers[0])].rate,
            cells[(PEER, "genOrder", callers[0])].rate,
        )
        say(
            f"{side}: genOrder saturated {best[1]:.0f}/s at {best[0]} callers (p99 "
            f"{best[2]} ms), peer {peer_best[1]:.0f}/s at {peer_best[0]} (p99 {peer_best[2]} ms): "
            f"flow / peer {best[1] / peer_best[1]:.2f} at saturation, "
            f"{at16[0] / at16[1]:.2f} at {callers[0]} callers"
        )


def _best(
    cells: Cells, side: str, callers: tuple[int, ...]
) -> tuple[int, float, float | None] | None:
    counted = [(n, cells[(side, "genOrder", n)]) for n in callers if (side, "genOrder", n) in cells]
    counted = [(n, c) for n, c in counted if c.counts]
    if not counted:
        return None
    n, c = max(counted, key=lambda nc: nc[1].rate)
    return n, c.rate, percentile_ms(c.latencies, 99)


def sweep(
    callers: str, code: list[str], rounds: int | None, requests: int | None, url: str | None
) -> int:
    """The sweep from its options (`inventory bench --order-path --callers ...` and this
    module's own); 0 when every load counted (at most 1% errors). ValueError: bad options."""
    try:
        counts = tuple(int(n) for n in callers.split(","))
        codes: dict[str, str | None] = {}
        for name, path in (c.split("=", 1) for c in code):
            codes[name] = path
    except ValueError:
        raise ValueError("--callers takes numbers (16,64,256), --code NAME=PATH") from None
    cells = run(codes or {"flow": None}, counts, rounds or 2, requests or 1500, url)
    report(cells, counts)
    return 0 if all(c.counts for c in cells.values()) else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--code", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--callers", default=",".join(map(str, CALLERS)))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--requests", type=int, default=1500)
    parser.add_argument("--database-url")
    args = parser.parse_args()
    raise SystemExit(sweep(args.callers, args.code, args.rounds, args.requests, args.database_url))


if __name__ == "__main__":
    main()
