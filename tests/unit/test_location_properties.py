"""Property-based tests (Hypothesis) of stock in several locations, against a one-at-a-time
reference written here from docs/locations.md: every unit lives at one location (the
default's level is the total less the named ones' in the code, a plain number here); a
deduction takes what the allocation rule chooses from the active locations (all or nothing,
or partial); a return gives each unit back where it came from; a transfer's out leg takes
units out of its source into transit, its in leg puts them in its target (receive) or back in
its source (cancel), each once; an adjustment moves one location.

1. A batch planned together (stock_service/core/plan.py) answers every request as the reference
   does applying them one at a time, and leaves the same level at every location.
2. After any batch: no location below zero, each location's level is its start plus its
   entries' parts, the total is the sum of the locations, and units in transit are counted.
3. The rule held at every deduction, on the levels the members before it left: a line split
   only when no active location could fill it; one location for the order whenever one could.
4. A neighbour that changes nothing (refused, a transfer beyond its source, an unknown
   transfer) changes no other member's answer.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from hypothesis import given, note, settings
from hypothesis import strategies as st

from shared.contract import AS_DEDUCTION, Decided, Outcome
from stock_service.core.allocation import Line, allocate
from stock_service.core.model import Adjustment, Kind, Request, TransferLeg
from stock_service.core.places import DEFAULT, Place, ranked
from stock_service.core.plan import Plan, plan
from stock_service.core.transfers import Transfer

GOODS = ["g0", "g1"]
NAMED = ["n", "s", "e"]
LOCS = [DEFAULT, *NAMED]
FAST = settings(max_examples=300, deadline=None)

Answer = tuple[Outcome, tuple[tuple[str, str, int], ...], tuple[tuple[str, int, int], ...]]


@dataclass
class World:
    """Where every unit is, what each flag took from where, and the transfers."""

    at: dict[tuple[str, str], int]  # (goods, location) -> units
    places: dict[str, Place]
    decided: dict[str, str] = field(default_factory=dict)
    took: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)  # flag->g->loc
    transfers: dict[str, Transfer] = field(default_factory=dict)

    def copy(self) -> World:
        took = {f: {g: dict(p) for g, p in parts.items()} for f, parts in self.took.items()}
        return World(
            dict(self.at), dict(self.places), dict(self.decided), took, dict(self.transfers)
        )

    def total(self, goods: str) -> int:
        return sum(n for (g, _), n in self.at.items() if g == goods)

    def active(self) -> list[str]:
        return [loc.location_id for loc in ranked(self.places)]


def apply(w: World, r: Request) -> Answer:
    """One request, alone, on the world."""
    if r.adjust is not None:
        a = r.adjust
        where = a.location or DEFAULT
        level = w.at.get((a.goods_id, where), 0)
        if a.expected is not None and a.expected != level:
            return Outcome.STALE, (), ()
        delta = a.delta if a.delta is not None else (a.num or 0) - level
        if level + delta < 0:
            return Outcome.BELOW_ZERO, (), ()
        w.at[(a.goods_id, where)] = level + delta
        return Outcome.ADJUSTED, (), ()
    if r.transfer is not None:
        return _transfer(w, r.transfer), (), ()
    earlier = w.decided.get(r.flag)
    if r.kind is Kind.RETURN:
        if earlier == Decided.DEDUCTED:
            for g, parts in w.took[r.flag].items():
                for loc, n in parts.items():
                    w.at[(g, loc)] = w.at.get((g, loc), 0) + n
            w.decided[r.flag] = Decided.RETURNED
            return Outcome.RETURNED, (), ()
        return (Outcome.RETURNED if earlier == Decided.RETURNED else Outcome.VOIDED), (), ()
    if earlier is not None:
        return AS_DEDUCTION[Decided(earlier)], (), ()
    active = w.active()
    have = {g: {loc: w.at.get((g, loc), 0) for loc in active} for g in r.lines}
    lines = [Line(g, n, r.locations.get(g)) for g, n in sorted(r.lines.items())]
    chosen = allocate(lines, ranked(w.places), have, r.partial)
    short = tuple(sorted((s.goods_id, s.wanted, s.filled) for s in chosen.shortfalls))
    if chosen.refused:
        w.decided[r.flag] = Decided.REFUSED
        return Outcome.INSUFFICIENT, (), ()
    w.decided[r.flag] = Decided.DEDUCTED
    took: dict[str, dict[str, int]] = defaultdict(dict)
    for part in chosen.allocations:
        w.at[(part.goods_id, part.location_id)] -= part.units
        took[part.goods_id][part.location_id] = part.units
    w.took[r.flag] = dict(took)
    got = tuple(sorted((x.goods_id, x.location_id, x.units) for x in chosen.allocations))
    return Outcome.DEDUCTED, got, short


def _transfer(w: World, leg: TransferLeg) -> Outcome:
    found = w.transfers.get(leg.transfer_id)
    if leg.step == "out":
        if found is not None:
            return Outcome.DUPLICATE
        if w.at.get((leg.goods_id, leg.source), 0) < leg.units:
            return Outcome.BELOW_ZERO
        w.at[(leg.goods_id, leg.source)] -= leg.units
        w.transfers[leg.transfer_id] = Transfer(
            leg.transfer_id, leg.goods_id, leg.source, leg.target, leg.units, "in_transit", "r"
        )
        return Outcome.ADJUSTED
    if found is None:
        return Outcome.STALE
    wanted = "received" if leg.step == "receive" else "cancelled"
    if found.state == wanted:
        return Outcome.DUPLICATE
    if found.state != "in_transit":
        return Outcome.STALE
    where = found.target if leg.step == "receive" else found.source
    w.at[(found.goods_id, where)] = w.at.get((found.goods_id, where), 0) + found.units
    w.transfers[leg.transfer_id] = Transfer(
        found.transfer_id, found.goods_id, found.source, found.target, found.units, wanted, "r"
    )
    return Outcome.ADJUSTED


def planned(w: World, batch: list[Request]) -> Plan:
    """The code's plan of a batch on what a hold would read of the world."""
    totals = {g: w.total(g) for g in GOODS}
    named: dict[str, dict[str, int]] = defaultdict(dict)
    for (g, loc), n in w.at.items():
        if loc != DEFAULT:
            named[g][loc] = n
    return plan(
        batch,
        totals,
        dict(w.decided),
        {g: 10 for g in GOODS},
        frozenset(),
        {g: 1 for g in GOODS},
        named=named,
        places=w.places,
        transfers=w.transfers,
    )


def answer_of(p: Plan, i: int) -> Answer:
    d = p.decisions[i]
    short: tuple[tuple[str, int, int], ...] = ()
    if d.outcome is Outcome.DEDUCTED:
        short = tuple(sorted((s.goods_id, s.requested, s.available) for s in d.shortfalls))
    return d.outcome, tuple(sorted(d.allocations)), short


def levels_after(w: World, p: Plan) -> dict[tuple[str, str], int]:
    """Every location's level after the plan, as the code would leave it."""
    named = {(g, loc): n for (g, loc), n in w.at.items() if loc != DEFAULT}
    for row in p.locations:
        named[(str(row["goods_id"]), str(row["location_id"]))] = int(row["num"])  # type: ignore[call-overload]
    out = dict(named)
    for g in GOODS:
        out[(g, DEFAULT)] = p.levels.get(g, w.total(g)) - sum(
            n for (gg, _), n in named.items() if gg == g
        )
    return out


# --- generated worlds and batches -------------------------------------------------------------


@st.composite
def worlds(draw: st.DrawFn) -> World:
    at = {(g, loc): draw(st.integers(0, 4)) for g in GOODS for loc in LOCS}
    places = {
        loc: Place(loc, draw(st.integers(0, 3)), draw(st.booleans()) or loc == "n") for loc in NAMED
    }
    if draw(st.booleans()):
        places[DEFAULT] = Place(DEFAULT, draw(st.integers(0, 3)), draw(st.booleans()))
    w = World(at, places)
    # flags deducted before the batch, each with where it took from (already out of the levels)
    for flag in ("p0", "p1"):
        if draw(st.booleans()):
            w.decided[flag] = Decided.DEDUCTED
            w.took[flag] = {"g0": {draw(st.sampled_from(LOCS)): draw(st.integers(1, 3))}}
    if draw(st.booleans()):
        w.transfers["t0"] = Transfer("t0", "g0", "n", "s", 2, draw(st.sampled_from(STATES)), "r")
    return w


STATES = ["in_transit", "received", "cancelled"]


@st.composite
def requests(draw: st.DrawFn) -> Request:
    kind = draw(st.sampled_from(["deduct"] * 3 + ["return", "adjust"] + ["transfer"] * 2))
    if kind == "deduct":
        goods = draw(st.lists(st.sampled_from(GOODS), min_size=1, max_size=2, unique=True))
        lines = {g: draw(st.integers(1, 7)) for g in goods}
        locations = {g: draw(st.sampled_from(LOCS)) for g in goods if draw(st.booleans())}
        flag = draw(st.sampled_from(["f0", "f1", "f2", "f3", "f4", "f5"]))
        return Request(flag, lines, locations=locations, partial=draw(st.booleans()))
    if kind == "return":
        # only of flags deducted before the batch: a cancel reads its lines before the hold
        return Request(draw(st.sampled_from(["p0", "p1"])), {}, Kind.RETURN)
    if kind == "adjust":
        g, loc = draw(st.sampled_from(GOODS)), draw(st.sampled_from(LOCS))
        if draw(st.booleans()):
            change = Adjustment(g, "restock", delta=draw(st.integers(-3, 3)), location=loc)
        else:
            change = Adjustment(g, "set", num=draw(st.integers(0, 5)), location=loc)
        return Request(
            draw(st.sampled_from(["a0", "a1", "a2"])), {g: 0}, Kind.ADJUST, adjust=change
        )
    step = draw(st.sampled_from(["out", "out", "receive", "cancel"]))
    tid = draw(st.sampled_from(["t0", "t0", "t1", "t2"]))
    source, target = draw(st.lists(st.sampled_from(LOCS), min_size=2, max_size=2, unique=True))
    leg = TransferLeg(tid, step, "g0", source, target, draw(st.integers(1, 4)), "r")
    return Request(tid, {"g0": 0}, Kind.TRANSFER, transfer=leg)


def with_parts(w: World, batch: list[Request]) -> list[Request]:
    """A return carries its lines and parts as read before the hold (as deduction.cancel does):
    those of a flag deducted before the batch; none for the others."""
    out = []
    for r in batch:
        if r.kind is Kind.RETURN and r.flag in w.took:
            parts = w.took[r.flag]
            lines = {g: sum(p.values()) for g, p in parts.items()}
            r = Request(r.flag, lines, Kind.RETURN, parts=parts)
        out.append(r)
    return out


batches = st.lists(requests(), min_size=1, max_size=8)


# --- the properties ---------------------------------------------------------------------------


@FAST
@given(w=worlds(), batch=batches)
def test_a_batch_answers_and_leaves_what_one_at_a_time_does(w: World, batch: list[Request]) -> None:
    batch = with_parts(w, batch)
    note(f"{w!r}\n{batch!r}")
    p = planned(w, batch)
    serial = w.copy()
    for i, r in enumerate(batch):
        assert answer_of(p, i) == apply(serial, r), (i, r)
    after = levels_after(w, p)
    assert {k: after.get(k, 0) for k in serial.at} == serial.at
    assert all(n >= 0 for n in after.values()), after


@FAST
@given(w=worlds(), batch=batches)
def test_each_location_replays_from_its_entries(w: World, batch: list[Request]) -> None:
    batch = with_parts(w, batch)
    p = planned(w, batch)
    replay = dict(w.at)
    for entry in p.entries:
        assert sum(d for _, d in entry.parts) == entry.delta, entry
        for loc, delta in entry.parts:
            replay[(entry.goods_id, loc)] = replay.get((entry.goods_id, loc), 0) + delta
    after = levels_after(w, p)
    assert {k: after.get(k, 0) for k in replay} == replay
    # units in transit: every out leg not yet met by an in leg
    moving = sum(t.units for t in w.transfers.values() if t.state == "in_transit")
    for entry in p.entries:
        if entry.kind == "transfer_out" or entry.kind == "transfer_in":
            moving -= entry.delta
    total_before = sum(w.total(g) for g in GOODS)
    total_after = sum(p.levels.get(g, w.total(g)) for g in GOODS)
    others = sum(e.delta for e in p.entries if not e.kind.startswith("transfer"))
    start_moving = sum(t.units for t in w.transfers.values() if t.state == "in_transit")
    assert total_before + start_moving + others == total_after + moving


@FAST
@given(w=worlds(), batch=batches)
def test_the_rule_held_at_every_deduction(w: World, batch: list[Request]) -> None:
    batch = with_parts(w, batch)
    p = planned(w, batch)
    serial = w.copy()
    for i, r in enumerate(batch):
        before = serial.copy()
        apply(serial, r)
        d = p.decisions[i]
        if r.kind is not Kind.DEDUCT or r.transfer or r.adjust or d.outcome is not Outcome.DEDUCTED:
            continue
        active = before.active()
        by_goods: dict[str, set[str]] = defaultdict(set)
        for g, loc, _n in d.allocations:
            by_goods[g].add(loc)
            assert loc in active or r.locations.get(g) == loc, (loc, active)
        for g, where in by_goods.items():
            if len(where) > 1:  # split: no active location could fill the line alone
                assert all(before.at.get((g, loc), 0) < r.lines[g] for loc in active), (g, r)
        free = [g for g in r.lines if g not in r.locations]
        whole = [
            loc for loc in active if all(before.at.get((g, loc), 0) >= r.lines[g] for g in free)
        ]
        if free and whole:  # one location could fill the order's free lines: one was used
            assert len({loc for g in free for loc in by_goods[g]}) == 1, (whole, d.allocations)


@st.composite
def poisoned(draw: st.DrawFn) -> Request:
    """A member that changes nothing: too much to fill, a transfer beyond any level, a step of
    a transfer there is none of."""
    kind = draw(st.sampled_from(["huge", "far", "ghost"]))
    if kind == "huge":
        return Request("z0", {"g1": 999}, locations={"g1": draw(st.sampled_from(LOCS))})
    if kind == "far":
        leg = TransferLeg("tz", "out", "g0", "n", "s", 999, "r")
        return Request("tz", {"g0": 0}, Kind.TRANSFER, transfer=leg)
    leg = TransferLeg("tq", "receive", "g0", "n", "s", 1, "r")
    return Request("tq", {"g0": 0}, Kind.TRANSFER, transfer=leg)


@FAST
@given(w=worlds(), batch=batches, bad=poisoned(), data=st.data())
def test_a_neighbour_that_changes_nothing_changes_no_other_answer(
    w: World, batch: list[Request], bad: Request, data: st.DataObject
) -> None:
    batch = with_parts(w, batch)
    at = data.draw(st.integers(0, len(batch)))
    alone = planned(w, batch)
    beside = planned(w, [*batch[:at], bad, *batch[at:]])
    assert beside.decisions[at].outcome in (Outcome.INSUFFICIENT, Outcome.BELOW_ZERO, Outcome.STALE)
    others = [i if i < at else i + 1 for i in range(len(batch))]
    assert [answer_of(alone, i) for i in range(len(batch))] == [
        answer_of(beside, j) for j in others
    ]
    assert levels_after(w, alone) == levels_after(w, beside)
