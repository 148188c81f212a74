"""Property-based tests (Hypothesis) of backorders, against a one-at-a-time reference written
here from stock_service/core/backorders.py's rules: a deduction with fill=backorder takes what
is on hand and owes the rest when the units owed stay within the limit, else it is refused;
units that arrive go to the waiting lines oldest first; a deduction of a goods id with lines
waiting finds what is on hand handed to them first; a cancel gives up the line's place and
gives back what it had.

1. A batch planned together answers each request, and leaves each level, the units owed and
   the lines waiting, as the reference applying them one at a time does.
2. Fairness, from the plan's own ledger lines: no line gets units while an earlier line of the
   same goods id still waits; the units owed never exceed the limit at any line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, note, settings
from hypothesis import strategies as st

from shared.contract import AS_DEDUCTION, Decided, Outcome
from stock_service.core.backorders import Waiting
from stock_service.core.model import Adjustment, Entry, Kind, Request
from stock_service.core.places import DEFAULT
from stock_service.core.plan import Plan, plan

GOODS = ["g0", "g1"]
FAST = settings(max_examples=300, deadline=None)


@dataclass
class World:
    levels: dict[str, int]
    limits: dict[str, int]
    waiting: dict[str, list[list]] = field(default_factory=dict)  # g -> [[flag, remaining]]
    decided: dict[str, str] = field(default_factory=dict)
    got: dict[str, dict[str, int]] = field(default_factory=dict)  # flag -> g -> units had

    def copy(self) -> World:
        return World(
            dict(self.levels),
            dict(self.limits),
            {g: [list(x) for x in w] for g, w in self.waiting.items()},
            dict(self.decided),
            {f: dict(x) for f, x in self.got.items()},
        )

    def owed(self, g: str) -> int:
        return sum(r for _, r in self.waiting.get(g, []))

    def serve(self, g: str) -> None:
        line = self.waiting.get(g, [])
        while line and self.levels.get(g, 0) > 0:
            take = min(line[0][1], self.levels[g])
            self.levels[g] -= take
            line[0][1] -= take
            self.got.setdefault(line[0][0], {})
            self.got[line[0][0]][g] = self.got[line[0][0]].get(g, 0) + take
            if line[0][1] == 0:
                line.pop(0)


def apply(w: World, r: Request) -> Outcome:
    if r.adjust is not None:
        g = r.adjust.goods_id
        if w.levels.get(g, 0) + (r.adjust.delta or 0) < 0:
            return Outcome.BELOW_ZERO
        w.levels[g] = w.levels.get(g, 0) + (r.adjust.delta or 0)
        w.serve(g)
        return Outcome.ADJUSTED
    earlier = w.decided.get(r.flag)
    if r.kind is Kind.RETURN:
        if earlier == Decided.DEDUCTED:
            for g, n in w.got.get(r.flag, {}).items():
                w.levels[g] = w.levels.get(g, 0) + n
            for g in GOODS:
                w.waiting[g] = [x for x in w.waiting.get(g, []) if x[0] != r.flag]
                w.serve(g)
            w.got.pop(r.flag, None)
            w.decided[r.flag] = Decided.RETURNED
            return Outcome.RETURNED
        return Outcome.RETURNED if earlier == Decided.RETURNED else Outcome.VOIDED
    if earlier is not None:
        return AS_DEDUCTION[Decided(earlier)]
    for g in sorted(r.lines):
        w.serve(g)
    short = {g: n - w.levels.get(g, 0) for g, n in r.lines.items() if w.levels.get(g, 0) < n}
    if not short:
        for g, n in r.lines.items():
            w.levels[g] -= n
        w.got[r.flag] = dict(r.lines)
        w.decided[r.flag] = Decided.DEDUCTED
        return Outcome.DEDUCTED
    if not r.backorder or any(w.owed(g) + n > w.limits.get(g, 0) for g, n in short.items()):
        w.decided[r.flag] = Decided.REFUSED
        return Outcome.INSUFFICIENT
    w.got[r.flag] = {}
    for g, n in sorted(r.lines.items()):
        take = min(n, w.levels.get(g, 0))
        if take:
            w.levels[g] -= take
            w.got[r.flag][g] = take
        if g in short:
            w.waiting.setdefault(g, []).append([r.flag, short[g]])
    w.decided[r.flag] = Decided.DEDUCTED
    return Outcome.BACKORDERED


SEQ0 = 100  # each goods id's last ledger seq before the batch


def planned(w: World, batch: list[Request]) -> Plan:
    waiting = {
        g: [Waiting(f, g, i + 1, rem) for i, (f, rem) in enumerate(lines)]
        for g, lines in w.waiting.items()
    }
    return plan(
        batch,
        dict(w.levels),
        dict(w.decided),
        {g: SEQ0 for g in GOODS},
        frozenset(),
        {g: 1 for g in GOODS},
        limits=w.limits,
        owed={g: w.owed(g) for g in GOODS},
        waiting=waiting,
    )


@st.composite
def worlds(draw: st.DrawFn) -> World:
    w = World(
        {g: draw(st.integers(0, 3)) for g in GOODS}, {g: draw(st.integers(0, 6)) for g in GOODS}
    )
    for i, g in enumerate(draw(st.lists(st.sampled_from(GOODS), max_size=3))):
        flag = f"w{i}"
        if flag in w.decided:
            continue
        w.levels[g] = 0  # lines wait only while nothing is on hand
        remaining = draw(st.integers(1, 2))
        w.waiting.setdefault(g, []).append([flag, remaining])
        w.decided[flag] = Decided.DEDUCTED
        w.got[flag] = {g: draw(st.integers(0, 1))}
    for g in GOODS:
        w.limits[g] = max(w.limits[g], w.owed(g))
    return w


@st.composite
def requests(draw: st.DrawFn) -> Request:
    kind = draw(st.sampled_from(["deduct"] * 4 + ["restock"] * 2 + ["return"]))
    if kind == "deduct":
        goods = draw(st.lists(st.sampled_from(GOODS), min_size=1, max_size=2, unique=True))
        lines = {g: draw(st.integers(1, 4)) for g in goods}
        flag = draw(st.sampled_from([f"f{i}" for i in range(6)]))
        return Request(flag, lines, backorder=draw(st.booleans()))
    if kind == "restock":
        g = draw(st.sampled_from(GOODS))
        change = Adjustment(g, "restock", delta=draw(st.integers(1, 4)))
        return Request(draw(st.sampled_from(["a0", "a1"])), {g: 0}, Kind.ADJUST, adjust=change)
    return Request(draw(st.sampled_from(["w0", "w1", "w2"])), {}, Kind.RETURN)


def with_lines(w: World, batch: list[Request]) -> list[Request]:
    """A return carries what its flag had and the goods ids it waits on, read before the hold
    (as StockStore.returning does); all of it in the default location here."""
    out = []
    for r in batch:
        if r.kind is Kind.RETURN and w.decided.get(r.flag) == Decided.DEDUCTED:
            lines = dict(w.got.get(r.flag, {}))
            for g, line in w.waiting.items():
                if any(f == r.flag for f, _ in line):
                    lines.setdefault(g, 0)
            parts = {g: {DEFAULT: n} for g, n in lines.items() if n}
            r = Request(r.flag, lines, Kind.RETURN, parts=parts)
        out.append(r)
    return out


batches = st.lists(requests(), min_size=1, max_size=8)


@FAST
@given(w=worlds(), batch=batches)
def test_a_batch_answers_and_leaves_what_one_at_a_time_does(w: World, batch: list[Request]) -> None:
    batch = with_lines(w, batch)
    note(f"{w!r}\n{batch!r}")
    p = planned(w, batch)
    serial = w.copy()
    for i, r in enumerate(batch):
        assert p.decisions[i].outcome == apply(serial, r), (i, r)
    assert {g: p.levels.get(g, w.levels[g]) for g in GOODS} == serial.levels
    assert p.backorders is not None
    assert {g: p.backorders.owed.get(g, 0) for g in GOODS} == {g: serial.owed(g) for g in GOODS}
    after = {g: [(x.flag, x.remaining) for x in p.backorders.waiting.get(g, [])] for g in GOODS}
    assert after == {g: [tuple(x) for x in serial.waiting.get(g, [])] for g in GOODS}


@FAST
@given(w=worlds(), batch=batches)
def test_no_line_is_served_while_an_earlier_one_waits_and_the_cap_holds(
    w: World, batch: list[Request]
) -> None:
    batch = with_lines(w, batch)
    p = planned(w, batch)
    queue = {g: [[f, rem] for f, rem in lines] for g, lines in w.waiting.items()}
    owed = {g: w.owed(g) for g in GOODS}

    def give_up(flag: str, g: str) -> None:
        for x in queue.get(g, []):
            if x[0] == flag:
                owed[g] -= x[1]
                x[1] = 0

    def take(entry: Entry) -> None:
        g = entry.goods_id
        if entry.kind == "backordered":
            flag = batch[entry.index].flag
            units = p.decisions[entry.index].backordered[g]
            queue.setdefault(g, []).append([flag, units])
            owed[g] += units
            assert owed[g] <= w.limits[g], (g, owed[g], w.limits[g])
        elif entry.kind == "backorder_filled":
            first = next(x for x in queue[g] if x[1] > 0)
            assert first[0] == entry.flag, ("a later line served first", entry, queue[g])
            first[1] += entry.delta
            owed[g] += entry.delta

    returned_before: set[str] = set()
    # request by request, in the batch's order: a return gives back (its `returned` lines),
    # then its flag leaves every line, then what came back is handed on
    for i, asked in enumerate(batch):
        mine = [e for e in p.entries if e.index == i]
        returning = asked.kind is Kind.RETURN and p.decisions[i].outcome is Outcome.RETURNED
        for entry in mine if not returning else [e for e in mine if e.kind == "returned"]:
            take(entry)
        if returning:
            for g in GOODS:
                give_up(asked.flag, g)
                # its place in the ledger: after this goods id's last line so far (its return),
                # recorded by the flag's first return in the batch (a repeat moves nothing)
                assert p.backorders is not None
                after = p.backorders.gave_up_after.get((asked.flag, g))
                before = [e.seq for e in p.entries if e.goods_id == g and e.index < i]
                before += [e.seq for e in mine if e.goods_id == g and e.kind == "returned"]
                if asked.flag not in returned_before:
                    assert after in (None, max([SEQ0, *before])), (asked.flag, g, after, before)
            returned_before.add(asked.flag)
            for entry in (e for e in mine if e.kind != "returned"):
                take(entry)
        for line in queue.values():
            line[:] = [x for x in line if x[1] > 0]
    # a return of a flag waiting on nothing it had: it still leaves the line
    for g in GOODS:
        left = {f for f, _ in queue.get(g, [])}
        returned = {
            r.flag for i, r in enumerate(batch) if p.decisions[i].outcome is Outcome.RETURNED
        }
        assert p.backorders is not None
        assert {x.flag for x in p.backorders.waiting.get(g, [])} == left - returned
