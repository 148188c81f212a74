"""What a chaos run does on the stock side besides the buyers: it opens a consumer of
the stock events before anything of the run is written, seeds the run's goods (each seed an
adjustment of reason `set`; the located goods at each of the run's three locations,
locations.py) with low-stock thresholds on the hot ones, runs the stock keeper (restocks.py)
and the mover of the located goods (transfers.py) beside the buyers, and after the settlement
judges the adjustments (HA), the transfers' answers (LT) and the events the consumer got
(I10), from the stream and, after an interruption, from the stock database (catch_up.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import Engine

from inventory.chaos import (
    backorders,
    catch_up,
    history,
    ledger_checks,
    location_checks,
    locations,
)
from inventory.chaos.backorders import Restocker
from inventory.chaos.restocks import Adjust, StockKeeper
from inventory.chaos.stream_consumer import StreamConsumer
from inventory.chaos.transfers import Mover
from inventory.chaos.verdict import Verdict
from inventory.chaos.workload import Goods, Workload
from inventory.cluster import topology
from inventory.cluster.deploy import ClusterState

LOW_STOCK = 10  # the hot goods' threshold: low_stock, out_of_stock, back_in_stock events


@dataclass
class StockSide:
    state: ClusterState
    goods: Goods
    seed: int = 1
    consumer: StreamConsumer | None = None
    keeper: StockKeeper | None = None
    mover: Mover | None = None  # the located goods' transfers and restocks (transfers.py)
    restocker: Restocker | None = None  # the backordered goods' arrivals (backorders.py)
    transfers: dict[str, tuple[str, ...]] = field(default_factory=dict)  # read by check()
    verdicts: list[Verdict] = field(default_factory=list)

    def open(self) -> None:
        """The consumer's group first (it gets every event from here on), then the seeds."""
        self.consumer = StreamConsumer(
            self.state.secrets.redis_url("events"),
            topology.EVENTS_STREAM,
            group=f"chaos-{self.goods.prefix}",
            prefix=self.goods.prefix,
            catch_up=partial(catch_up.events_after, topology.STOCK_URL),
            after=catch_up.last_id(topology.STOCK_URL),  # before the run writes anything
        )
        self.consumer.open()
        self.consumer.start()
        headers = self.state.admin_headers()
        with httpx.Client(base_url=topology.STOCK_URL, timeout=10, headers=headers) as client:
            for goods_id, level in self.goods.levels.items():
                if goods_id not in self.goods.located:  # seeded at their locations below
                    client.put(f"/stock/{goods_id}", json={"num": level}).raise_for_status()
            locations.set_up(client, self.goods.located)
            backorders.set_up(client, self.goods.owed)
            for goods_id in self.goods.hot:
                answer = client.put(f"/stock/{goods_id}/threshold", json={"lowStock": LOW_STOCK})
                answer.raise_for_status()

    def start_keeper(self, load: Workload) -> None:
        """Adjustments beside the buyers, on the hot and the other goods (the scarce goods of
        slow-first-attempts are left alone: its LA figures rebuild their levels from flows and
        returns alone)."""
        at = (topology.VIP, topology.LB_STOCK_PORT, self.state.admin_headers(), self.goods.prefix)
        hot, others = list(self.goods.hot), list(self.goods.others)
        self.keeper = StockKeeper(*at, hot, others, load, self.seed)
        self.mover = Mover(*at, [], [], load, self.seed, located=list(self.goods.located))
        self.restocker = Restocker(*at, [], [], load, self.seed, owed=list(self.goods.owed))
        for operator in (self.keeper, self.mover, self.restocker):
            operator.start()

    def stop_keeper(self) -> None:
        for operator in (self.keeper, self.mover, self.restocker):
            if operator is not None:
                operator.stop()

    @property
    def adjustments(self) -> list[Adjust]:
        """The keeper's adjustments and the mover's and the restocker's restocks, in the order
        they were sent."""
        ops = [*(op for who in (self.keeper, self.mover, self.restocker) if who for op in who.ops)]
        return sorted(ops, key=lambda op: op.invoke)

    def check(self, stock_engine: Engine) -> list[Verdict]:
        """After the settlement: HA, then I10 (which waits for the relays and the consumer)."""
        assert self.consumer is not None and self.keeper is not None
        prefix = self.goods.prefix
        try:
            entries = ledger_checks.read_entries(stock_engine, prefix)
            self.verdicts.append(ledger_checks.adjustments_hold(self.adjustments, entries))
        except Exception as exc:
            self.verdicts.append(
                Verdict("HA", "adjustments", "unknown", f"{type(exc).__name__}: {exc}")
            )
        if self.goods.located:
            moves = self.mover.moves if self.mover else []
            try:
                self.transfers = location_checks.read_transfers(stock_engine, prefix)
                self.verdicts.append(location_checks.transfers_hold(moves, self.transfers))
            except Exception as exc:
                failed = Verdict("LT", "transfers", "unknown", f"{type(exc).__name__}: {exc}")
                self.verdicts.append(failed)
        self.verdicts.append(ledger_checks.events_received(self.consumer, stock_engine, prefix))
        return self.verdicts

    def close(self) -> None:
        self.stop_keeper()
        if self.consumer is not None:
            self.consumer.stop()

    def summary(self) -> dict[str, Any]:
        ops = self.adjustments
        received = self.consumer.received() if self.consumer else []
        moves = self.mover.moves if self.mover else []
        transfers = location_checks.transfer_figures(moves, self.transfers)
        return {
            "transfers": transfers,
            "adjustments": {
                "sent": len(ops),
                "made": sum(1 for op in ops if op.status == 201),
                "refused": sum(1 for op in ops if op.known and op.status != 201),
                "unknown": sum(1 for op in ops if not op.known),
            },
            "events": {
                "received": len(received),
                "distinct": len({f.get("id") for _, f in received}),
                "interrupted": len(self.consumer.errors) if self.consumer else 0,
                "regrouped": self.consumer.regrouped if self.consumer else 0,
                # events first fetched from GET /stock-events, after an interruption
                "caught_up": len(self.consumer.caught_up) if self.consumer else 0,
                # of those, what the stream never brought: what Redis lost
                "lost_by_stream": len(self.consumer.lost_by_stream()) if self.consumer else 0,
            },
        }

    def write(self, folder: Path) -> None:
        history.write(self.adjustments, folder / "adjustments.jsonl")
        history.write(self.mover.moves if self.mover else [], folder / "transfers.jsonl")
