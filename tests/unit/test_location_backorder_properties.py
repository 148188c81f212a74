"""Property-based tests (Hypothesis) of backorders per location, against a one-at-a-time
reference written here from docs/backorders.md's rules:

- a deduction with fill=backorder whose line names a location takes what that location has
  (naming none: what every active location has) and owes the rest, when the units owed stay
  within the goods id's limit and, for a line naming a location with a limit, within that
  location's; else it is refused, its shortfall naming the limit that bound (the location's
  first);
- units on hand go to the waiting lines oldest first: a line naming a location takes units
  there only, a line naming none takes them from the active locations in priority order;
  before each deduction, after each arrival (a restock at a location, a return), and a
  cancel gives up its line's place.

1. A batch planned together answers each request, leaves each location's level, the units
   owed and the lines waiting (with their locations) as the reference applying them one at a
   time does, and names the same limit when it refuses.
2. From the plan's own ledger lines: no hand-over of units at a location while an earlier
   line that may take units there waits; the units owed never above the goods id's limit, and
   those of the lines naming a location never above that location's, at any line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, note, settings
from hypothesis import strategies as st

from shared.contract import AS_DEDUCTION, Decided, Outcome
from stock_service.core.backorders import Waiting
from stock_service.core.model import Adjustment, Entry, Kind, Request
from stock_service.core.places import DEFAULT, Place
from stock_service.core.plan import Plan, plan

GOODS = ["g0", "g1"]
NAMED = ["north", "south"]
LOCS = [DEFAULT, *NAMED]
FAST = settings(max_examples=300, deadline=None)


@dataclass
class World:
    priority: dict[str, int]  # north's and south's (default: 0)
    levels: dict[str, dict[str, int]]  # g -> location -> units
    limits: dict[str, int]
    capped: dict[str, dict[str, int]]  # g -> location -> limit
    waiting: dict[str, list[list]] = field(default_factory=dict)  # g -> [[flag, left, loc]]
    decided: dict[str, str] = field(default_factory=dict)
    got: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)  # flag -> g -> loc

    def copy(self) -> World:
        return World(
            dict(self.priority),
            {g: dict(x) for g, x in self.levels.items()},
            dict(self.limits),
            {g: dict(x) for g, x in self.capped.items()},
            {g: [list(x) for x in w] for g, w in self.waiting.items()},
            dict(self.decided),
            {f: {g: dict(x) for g, x in y.items()} for f, y in self.got.items()},
        )

    def order(self) -> list[str]:
        """The active locations, best first (every one is active here)."""
        return sorted(LOCS, key=lambda loc: (0 if loc == DEFAULT else self.priority[loc], loc))

    def owed(self, g: str) -> int:
        return sum(x[1] for x in self.waiting.get(g, []))

    def owed_at(self, g: str, loc: str) -> int:
        return sum(x[1] for x in self.waiting.get(g, []) if x[2] == loc)

    def had(self, flag: str, g: str, loc: str, n: int) -> None:
        mine = self.got.setdefault(flag, {}).setdefault(g, {})
        mine[loc] = mine.get(loc, 0) + n

    def serve(self, g: str) -> None:
        for line in self.waiting.get(g, []):
            for loc in [line[2]] if line[2] is not None else self.order():
                take = min(line[1], self.levels[g][loc])
                if take:
                    self.levels[g][loc] -= take
                    line[1] -= take
                    self.had(line[0], g, loc, take)
        self.waiting[g] = [x for x in self.waiting.get(g, []) if x[1] > 0]


def apply(w: World, r: Request) -> tuple[Outcome, tuple[str | None, int] | None]:
    """The outcome, and a refusal's limit that bound (its location, its limit)."""
    if r.adjust is not None:
        g, loc = r.adjust.goods_id, r.adjust.location or DEFAULT
        w.levels[g][loc] += r.adjust.delta or 0
        w.serve(g)
        return Outcome.ADJUSTED, None
    earlier = w.decided.get(r.flag)
    if r.kind is Kind.RETURN:
        if earlier != Decided.DEDUCTED:
            return (Outcome.RETURNED if earlier == Decided.RETURNED else Outcome.VOIDED), None
        goods = set(w.got.get(r.flag, {})) | {
            g for g, line in w.waiting.items() if any(x[0] == r.flag for x in line)
        }
        for g in sorted(goods):
            for loc, n in w.got.get(r.flag, {}).get(g, {}).items():
                w.levels[g][loc] += n
            w.waiting[g] = [x for x in w.waiting.get(g, []) if x[0] != r.flag]
            w.serve(g)
        w.got.pop(r.flag, None)
        w.decided[r.flag] = Decided.RETURNED
        return Outcome.RETURNED, None
    if earlier is not None:
        return AS_DEDUCTION[Decided(earlier)], None
    ((g, n),) = r.lines.items()
    loc = r.locations.get(g)
    w.serve(g)
    usable = [loc] if loc is not None else w.order()
    have = sum(w.levels[g][x] for x in usable)
    if have >= n:
        whole = [x for x in usable if w.levels[g][x] >= n]
        left = n
        for x in whole[:1] or usable:  # one location that fills it, else split in order
            take = min(left, w.levels[g][x])
            w.levels[g][x] -= take
            left -= take
            if take:
                w.had(r.flag, g, x, take)
        w.decided[r.flag] = Decided.DEDUCTED
        return Outcome.DEDUCTED, None
    short = n - have
    bound: tuple[str | None, int] | None = None
    if loc is not None and loc in w.capped[g] and w.owed_at(g, loc) + short > w.capped[g][loc]:
        bound = (loc, w.capped[g][loc])
    elif w.owed(g) + short > w.limits[g]:
        bound = (None, w.limits[g])
    if not r.backorder or bound is not None:
        w.decided[r.flag] = Decided.REFUSED
        return Outcome.INSUFFICIENT, bound if r.backorder else None
    for x in usable:
        if w.levels[g][x]:
            w.had(r.flag, g, x, w.levels[g][x])
            w.levels[g][x] = 0
    w.got.setdefault(r.flag, {})
    w.waiting.setdefault(g, []).append([r.flag, short, loc])
    w.decided[r.flag] = Decided.DEDUCTED
    return Outcome.BACKORDERED, None


SEQ0 = 100  # each goods id's last ledger seq before the batch


def planned(w: World, batch: list[Request]) -> Plan:
    waiting = {
        g: [Waiting(f, g, i + 1, left, loc) for i, (f, left, loc) in enumerate(lines)]
        for g, lines in w.waiting.items()
    }
    return plan(
        batch,
        {g: sum(w.levels[g].values()) for g in GOODS},
        dict(w.decided),
        {g: SEQ0 for g in GOODS},
        frozenset(),
        {g: 1 for g in GOODS},
        named={g: {loc: w.levels[g][loc] for loc in NAMED} for g in GOODS},
        places={loc: Place(loc, w.priority[loc]) for loc in NAMED},
        limits=w.limits,
        owed={g: w.owed(g) for g in GOODS},
        waiting=waiting,
        location_limits=w.capped,
    )


@st.composite
def worlds(draw: st.DrawFn) -> World:
    w = World(
        {loc: draw(st.integers(0, 2)) for loc in NAMED},
        {g: {loc: draw(st.integers(0, 3)) for loc in LOCS} for g in GOODS},
        {g: draw(st.integers(0, 6)) for g in GOODS},
        {
            g: draw(st.dictionaries(st.sampled_from(LOCS), st.integers(0, 3), max_size=2))
            for g in GOODS
        },
    )
    lines = draw(
        st.lists(st.tuples(st.sampled_from(GOODS), st.sampled_from([None, *LOCS])), max_size=4)
    )
    for i, (g, loc) in enumerate(lines):
        flag = f"w{i}"
        for x in [loc] if loc is not None else LOCS:  # a line waits only with none there
            w.levels[g][x] = 0
        w.waiting.setdefault(g, []).append([flag, draw(st.integers(1, 2)), loc])
        w.decided[flag] = Decided.DEDUCTED
        if draw(st.booleans()):
            w.had(flag, g, loc or DEFAULT, 1)
    for g in GOODS:
        w.limits[g] = max(w.limits[g], w.owed(g))
        for loc in w.capped[g]:
            w.capped[g][loc] = max(w.capped[g][loc], w.owed_at(g, loc))
    return w


@st.composite
def requests(draw: st.DrawFn) -> Request:
    kind = draw(st.sampled_from(["deduct"] * 4 + ["restock"] * 2 + ["return"]))
    g = draw(st.sampled_from(GOODS))
    if kind == "deduct":
        loc = draw(st.sampled_from([None, *LOCS]))
        flag = draw(st.sampled_from([f"f{i}" for i in range(6)]))
        located = {g: loc} if loc is not None else {}
        lines = {g: draw(st.integers(1, 4))}
        return Request(flag, lines, locations=located, backorder=draw(st.booleans()))
    if kind == "restock":
        loc = draw(st.sampled_from([None, *LOCS]))
        change = Adjustment(g, "restock", delta=draw(st.integers(1, 4)), location=loc)
        return Request(draw(st.sampled_from(["a0", "a1"])), {g: 0}, Kind.ADJUST, adjust=change)
    # A return reaches a batch only for a flag deducted before it (PUT /returnStock reads the
    # flag's decision first and voids an undecided one outside any batch): the world's lines.
    return Request(draw(st.sampled_from(["w0", "w1", "w2"])), {}, Kind.RETURN)


def with_lines(w: World, batch: list[Request]) -> list[Request]:
    """A return carries what its flag had, where from, and the goods ids it waits on, read
    before the hold (as StockStore.returning does), of the world before the batch."""
    out = []
    for r in batch:
        if r.kind is Kind.RETURN and w.decided.get(r.flag) == Decided.DEDUCTED:
            got = w.got.get(r.flag, {})
            lines = {g: sum(x.values()) for g, x in got.items()}
            for g, line in w.waiting.items():
                if any(x[0] == r.flag for x in line):
                    lines.setdefault(g, 0)
            parts = {g: dict(x) for g, x in got.items()}
            r = Request(r.flag, lines, Kind.RETURN, parts=parts, backorder=True)
        out.append(r)
    return out


def located_levels(w: World, p: Plan) -> dict[str, dict[str, int]]:
    """Each location's level after the plan: the named ones it moved, the default the rest."""
    named = {g: {loc: w.levels[g][loc] for loc in NAMED} for g in GOODS}
    for row in p.locations:
        named[str(row["goods_id"])][str(row["location_id"])] = int(row["num"])  # type: ignore[call-overload]
    total = {g: p.levels.get(g, sum(w.levels[g].values())) for g in GOODS}
    return {g: {DEFAULT: total[g] - sum(named[g].values()), **named[g]} for g in GOODS}


batches = st.lists(requests(), min_size=1, max_size=8)


@FAST
@given(w=worlds(), batch=batches)
def test_a_batch_answers_and_leaves_what_one_at_a_time_does(w: World, batch: list[Request]) -> None:
    batch = with_lines(w, batch)
    note(f"{w!r}\n{batch!r}")
    p = planned(w, batch)
    serial = w.copy()
    for i, r in enumerate(batch):
        outcome, bound = apply(serial, r)
        decision = p.decisions[i]
        assert decision.outcome == outcome, (i, r)
        said = [(s.bound.location, s.bound.limit) for s in decision.shortfalls if s.bound]
        assert said == ([bound] if bound is not None else []), (i, r, said, bound)
    assert located_levels(w, p) == serial.levels
    assert p.backorders is not None
    assert {g: p.backorders.owed.get(g, 0) for g in GOODS} == {g: serial.owed(g) for g in GOODS}
    after = {
        g: [(x.flag, x.remaining, x.location) for x in p.backorders.waiting.get(g, [])]
        for g in GOODS
    }
    assert after == {g: [tuple(x) for x in serial.waiting.get(g, [])] for g in GOODS}


@FAST
@given(w=worlds(), batch=batches)
def test_no_hand_over_at_a_location_an_earlier_line_may_take_and_the_caps_hold(
    w: World, batch: list[Request]
) -> None:
    batch = with_lines(w, batch)
    note(f"{w!r}\n{batch!r}")
    p = planned(w, batch)
    queue = {g: [list(x) for x in lines] for g, lines in w.waiting.items()}

    def owed(g: str, loc: str | None = None) -> int:
        return sum(x[1] for x in queue.get(g, []) if loc is None or x[2] == loc)

    def take(entry: Entry) -> None:
        g = entry.goods_id
        if entry.kind == "backordered":
            asked = batch[entry.index]
            loc = asked.locations.get(g)
            queue.setdefault(g, []).append(
                [asked.flag, p.decisions[entry.index].backordered[g], loc]
            )
            assert owed(g) <= w.limits[g], (g, owed(g), w.limits[g])
            if loc is not None and loc in w.capped[g]:
                assert owed(g, loc) <= w.capped[g][loc], (g, loc, owed(g, loc))
        elif entry.kind == "backorder_filled":
            line = queue[g]
            mine = next(i for i, x in enumerate(line) if x[0] == entry.flag and x[1] > 0)
            for loc, delta in entry.parts:
                assert line[mine][2] in (None, loc), ("handed units it may not take", entry)
                earlier = [x for x in line[:mine] if x[1] > 0 and x[2] in (None, loc)]
                assert not earlier, ("a later line served first at", loc, entry, line)
                line[mine][1] += delta
            assert line[mine][1] >= 0

    for i, asked in enumerate(batch):
        mine = [e for e in p.entries if e.index == i]
        returning = asked.kind is Kind.RETURN and p.decisions[i].outcome is Outcome.RETURNED
        for entry in mine if not returning else [e for e in mine if e.kind == "returned"]:
            take(entry)
        if returning:  # its flag leaves every line, then what came back is handed on
            for line in queue.values():
                line[:] = [x for x in line if x[0] != asked.flag]
            for entry in (e for e in mine if e.kind != "returned"):
                take(entry)
        for line in queue.values():
            line[:] = [x for x in line if x[1] > 0]
