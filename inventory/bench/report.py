"""What `inventory bench` measured and the ratios it is judged by (shown by show.py on the
terminal, written by files.py as bench.json and bench.png)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from inventory.bench.goals import member_costs, order_targets
from inventory.bench.measures import (
    COMBINING,
    COMBINING_SUFFIX,
    NO_LOCK,
    SINGLE_SUFFIX,
    Measure,
    Target,
    label,
)


@dataclass
class BenchReport:
    database: str
    concurrency: int
    rounds: int
    limits: list[Measure] = field(default_factory=list)
    reduce: list[Measure] = field(default_factory=list)
    gen_order: list[Measure] = field(default_factory=list)
    peer: list[Measure] = field(default_factory=list)  # the one-database peer's genOrder
    # reduceStock and genOrder on the hot goods id with one caller: what a lone request costs
    lone: list[Measure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, path: Path) -> BenchReport:
        """A report read back from its bench.json (to draw its chart again, say)."""
        data = json.loads(path.read_text())
        return cls(
            database=str(data["database"]),
            concurrency=int(data["concurrency"]),
            rounds=int(data["rounds"]),
            limits=[Measure(**m) for m in data["limits"]],
            reduce=[Measure(**m) for m in data["reduce"]],
            gen_order=[Measure(**m) for m in data["gen_order"]],
            peer=[Measure(**m) for m in data.get("peer", [])],  # none before the peer was benched
            lone=[Measure(**m) for m in data.get("lone", [])],
            notes=list(data["notes"]),
        )

    def find(self, name: str) -> Measure | None:
        measures = self.limits + self.reduce + self.gen_order + self.peer
        return next((m for m in measures if m.name == name), None)

    def reduce_of(self, config: str, goods: int) -> Measure | None:
        return next((m for m in self.reduce if m.config == config and m.goods == goods), None)

    def order_of(self, goods: int, events: bool = True) -> Measure | None:
        """genOrder on the ZooKeeper stack with combining (with the outbox, or without)."""
        config = label("zookeeper", "sku", COMBINING, events)
        return next((m for m in self.gen_order if m.goods == goods and m.config == config), None)

    def peer_of(self, goods: int) -> Measure | None:
        return next((m for m in self.peer if m.goods == goods), None)

    @property
    def spread(self) -> int:
        return max((m.goods for m in self.reduce + self.gen_order + self.peer), default=0)

    def raw_lock_cycle(self) -> Measure | None:
        """The faster of the two raw kazoo loops (kazoo's own handler, or this project's),
        so the ratio against it is the stricter one."""
        loops = [m for m in self.limits if m.name.startswith("kazoo lock cycle")]
        return max(loops, key=lambda m: m.per_second, default=None)

    def targets(self) -> list[Target]:
        out: list[Target] = []
        combined, single = label("zookeeper", "sku", COMBINING), label("zookeeper", "sku", 1)
        hot, hot_single = self.reduce_of(combined, 1), self.reduce_of(single, 1)
        hot_none = self.reduce_of(NO_LOCK, 1)
        wide, wide_none = (
            self.reduce_of(combined, self.spread),
            self.reduce_of(NO_LOCK, self.spread),
        )
        raw = self.raw_lock_cycle()
        if hot and hot_none and hot_none.per_second:
            ratio = hot.per_second / hot_none.per_second
            out.append(Target("zookeeper hot goods / no lock", ratio, 0.8, 0.95))
        if hot and raw and raw.per_second:
            ratio = hot.per_second / raw.per_second
            out.append(Target("zookeeper hot goods / raw kazoo lock cycle", ratio, 1.0, 1.5))
        if wide and wide_none and wide_none.per_second and self.spread > 1:
            ratio = wide.per_second / wide_none.per_second
            out.append(Target(f"zookeeper {self.spread} goods / no lock", ratio, 0.8))
        if hot and hot_single and hot.p99_ms and hot_single.p99_ms:
            ratio = hot.p99_ms / hot_single.p99_ms
            name = "zookeeper hot goods p99: combining / one at a time"
            out.append(Target(name, ratio, 1.0, at_most=True))
        return out + self.order_targets(hot)

    def order_targets(self, hot: Measure | None) -> list[Target]:
        """The order a buyer places: against the one-database peer, and on SQLite against
        the deduction it exists for (goals.py)."""
        return order_targets(self, hot)

    def outbox_pairs(self) -> list[tuple[str, Measure, Measure]]:
        """(load, with the outbox, without) for reduceStock and genOrder on the ZooKeeper stack
        with combining, where the run measured both."""
        on, off = label("zookeeper", "sku", COMBINING), label("zookeeper", "sku", COMBINING, False)
        out = []
        for goods in sorted({1, self.spread}):
            with_it, without = self.reduce_of(on, goods), self.reduce_of(off, goods)
            if with_it and without:
                out.append((f"reduceStock, {goods} goods", with_it, without))
        for goods in sorted({1, self.spread}):
            with_it, without = self.order_of(goods), self.order_of(goods, events=False)
            if with_it and without:
                out.append((f"genOrder, {goods} goods", with_it, without))
        return out

    def ratios(self) -> dict[str, float]:
        """Every target's ratio, what combining gains per backend and load, and what the
        outbox costs (events on / off: the rate, the stack's CPU per request)."""
        out = {t.name: round(t.value, 3) for t in self.targets()}
        order_hot = self.order_of(1)
        hot = self.reduce_of(label("zookeeper", "sku", COMBINING), 1)
        if order_hot and hot and hot.per_second:
            ratio = order_hot.per_second / hot.per_second
            out["genOrder / reduceStock, hot goods"] = round(ratio, 3)
        for cost in member_costs(self):
            if cost.ratio is not None:
                name = f"member / lone CPU per request, {cost.service}, {cost.load}"
                out[name] = round(cost.ratio, 3)
        for load, on, off in self.outbox_pairs():
            if off.per_second:
                out[f"outbox on / off, {load}: rate"] = round(on.per_second / off.per_second, 3)
            if off.stack_cpu_ms:
                out[f"outbox on / off, {load}: stack CPU per request"] = round(
                    on.stack_cpu_ms / off.stack_cpu_ms, 3
                )
        for m in self.reduce:
            if m.config.endswith(COMBINING_SUFFIX):
                base = m.config.removesuffix(COMBINING_SUFFIX)
                single = self.reduce_of(base + SINGLE_SUFFIX, m.goods)
                if single and single.per_second:
                    name = f"{base} {m.goods} goods: combining / one at a time"
                    out[name] = round(m.per_second / single.per_second, 3)
        return out
