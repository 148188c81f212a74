"""Property-based tests (Hypothesis).

1. The combiner's `plan` (stock_service/core/plan.py) against a plain serial reference written here
   from its documented semantics: whatever the mix and the arrival order, a batch gets exactly
   the answers and levels of its requests applied one at a time in that order; and a run of
   batches (a stateful machine) stays equal to the serial reference.
2. The checkers (inventory/check, inventory/chaos/history_checks.py) against generated worlds:
   a valid history and snapshot raise nothing; each planted violation is caught by its check.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from inventory.chaos.history import FAIL, OK, UNKNOWN, Op
from inventory.chaos.history_checks import (
    answered_ok_is_confirmed,
    answers_hold,
    one_order_per_key,
    refused_is_failed,
)
from inventory.chaos.verdict import VALID, VIOLATED
from inventory.check import REFUSED, Snapshot, check_invariants
from stock_service.core.plan import Adjustment, Kind, Outcome, Plan, Request, plan

GOODS = ["g0", "g1", "g2"]
FLAGS = [f"f{i}" for i in range(6)]
FAST = settings(max_examples=150, deadline=None)

# --- the serial reference -------------------------------------------------------------------

# The outcome, its shortfalls (goods, wanted, available), and an adjustment's level (after it,
# or the level that was stale).
Answer = tuple[Outcome, list[tuple[str, int, int]], int | None]


@dataclass
class Serial:
    """One request at a time, from stock_service/core/plan.py's docstring, with no batching."""

    levels: dict[str, int]
    # flag -> deducted | refused | voided | returned
    decided: dict[str, str] = field(default_factory=dict)

    def apply(self, request: Request) -> Answer:
        if request.adjust is not None:
            return self.adjust(request.adjust)
        earlier = self.decided.get(request.flag)
        if request.kind is Kind.RETURN:
            if earlier == "deducted":
                for goods, num in request.lines.items():
                    self.levels[goods] = self.levels.get(goods, 0) + num
                self.decided[request.flag] = "returned"
            returned = earlier in ("deducted", "returned")
            return (Outcome.RETURNED if returned else Outcome.VOIDED), [], None
        if earlier == "deducted":
            return Outcome.DUPLICATE, [], None
        if earlier == "voided":
            return Outcome.VOIDED, [], None
        if earlier == "returned":
            return Outcome.CANCELLED, [], None
        if earlier == "refused":  # told no once: no for good, whatever came back meanwhile
            return Outcome.INSUFFICIENT, [], None
        short = [
            (goods, wanted, self.levels.get(goods, 0))
            for goods, wanted in sorted(request.lines.items())
            if self.levels.get(goods, 0) < wanted
        ]
        if short:
            self.decided[request.flag] = "refused"
            return Outcome.INSUFFICIENT, short, None  # all or nothing: no line is taken
        for goods, wanted in request.lines.items():
            self.levels[goods] -= wanted
        self.decided[request.flag] = "deducted"
        return Outcome.DEDUCTED, [], None

    def adjust(self, a: Adjustment) -> Answer:
        """An adjustment (a restock, a loss, a count): by a delta, or to a level, only if the
        level is the one expected; never below zero."""
        level = self.levels.get(a.goods_id, 0)
        if a.expected is not None and a.expected != level:
            return Outcome.STALE, [], level
        after = level + a.delta if a.delta is not None else (a.num or 0)
        if after < 0:
            return Outcome.BELOW_ZERO, [], level
        self.levels[a.goods_id] = after
        return Outcome.ADJUSTED, [], after


def planned(
    requests: list[Request], levels: dict[str, int], decided: dict[str, str]
) -> tuple[Plan, list[Answer]]:
    the_plan = plan(requests, levels, decided)
    answers = [
        (d.outcome, [(s.goods_id, s.requested, s.available) for s in d.shortfalls], d.level)
        for d in the_plan.decisions
    ]
    return the_plan, answers


# --- strategies -----------------------------------------------------------------------------

lines = st.dictionaries(st.sampled_from(GOODS), st.integers(1, 6), min_size=1, max_size=3)
levels = st.fixed_dictionaries({g: st.integers(0, 8) for g in GOODS})
decided = st.dictionaries(
    st.sampled_from(FLAGS),
    st.sampled_from(["deducted", "refused", "voided", "returned"]),
    max_size=3,
)
orders_and_returns = st.builds(
    Request,
    flag=st.sampled_from(FLAGS),  # few flags: duplicates of one flag in a batch are common
    lines=lines,
    kind=st.sampled_from([Kind.DEDUCT, Kind.DEDUCT, Kind.DEDUCT, Kind.RETURN]),
)


@st.composite
def adjustments(draw: st.DrawFn) -> Request:
    """A restock or a loss by a delta, or a count to a level, with or without the level the
    caller saw; its own id as the flag (an adjustment has no operation flag)."""
    goods = draw(st.sampled_from(GOODS))
    if draw(st.booleans()):
        change = Adjustment(goods, "restock", delta=draw(st.integers(-4, 6)))
    else:
        expected = draw(st.one_of(st.none(), st.integers(0, 8)))
        change = Adjustment(goods, "count", num=draw(st.integers(0, 8)), expected=expected)
    return Request(f"adj-{draw(st.uuids()).hex[:8]}", {goods: 0}, Kind.ADJUST, adjust=change)


# Orders, returns and adjustments mixed in one batch (all served under the same hold).
requests = st.lists(
    st.one_of(orders_and_returns, orders_and_returns, orders_and_returns, adjustments()),
    max_size=8,
)


@FAST
@given(requests=requests, levels=levels, decided=decided)
def test_a_batch_answers_as_its_requests_one_at_a_time(
    requests: list[Request], levels: dict[str, int], decided: dict[str, str]
) -> None:
    serial = Serial(dict(levels), dict(decided))
    expected = [serial.apply(r) for r in requests]
    the_plan, answers = planned(requests, levels, decided)
    assert answers == expected
    assert the_plan.levels == serial.levels
    assert all(v >= 0 for v in the_plan.levels.values())
    moved = {g for g in GOODS if the_plan.levels[g] != levels[g]}
    assert moved <= the_plan.changed


@FAST
@given(requests=requests, levels=levels, decided=decided, data=st.data())
def test_any_arrival_order_is_some_serial_order(
    requests: list[Request], levels: dict[str, int], decided: dict[str, str], data: st.DataObject
) -> None:
    """Whatever order the requests queue in, the batch is that order's serial run, and the stock
    taken is exactly what the deducted requests asked (no more, no less)."""
    arrival = data.draw(st.permutations(requests))
    serial = Serial(dict(levels), dict(decided))
    expected = [serial.apply(r) for r in arrival]
    the_plan, answers = planned(arrival, levels, decided)
    assert answers == expected
    taken = {g: levels[g] - the_plan.levels[g] for g in GOODS}
    asked = dict.fromkeys(GOODS, 0)
    for entry in the_plan.entries:  # each ledger line: what it moved, in arrival order
        asked[entry.goods_id] -= entry.delta
    for i, (request, (outcome, _, _)) in enumerate(zip(arrival, answers, strict=True)):
        if request.adjust is not None:
            continue
        sign = 1 if outcome is Outcome.DEDUCTED else -1 if i in the_plan.returned else 0
        moved = sum(-e.delta for e in the_plan.entries if e.index == i)
        assert moved == sign * sum(request.lines.values())
    assert taken == asked
    assert all(answers[i][0] is Outcome.RETURNED for i in the_plan.returned)


@FAST
@given(requests=requests, levels=levels, decided=decided)
def test_a_batch_equals_its_requests_planned_one_by_one(
    requests: list[Request], levels: dict[str, int], decided: dict[str, str]
) -> None:
    """Combining changes nothing: a batch of n is n batches of one, the state carried over."""
    whole, answers = planned(requests, levels, decided)
    running, known = dict(levels), dict(decided)
    singles = []
    for request in requests:
        one, [answer] = planned([request], running, known)
        singles.append(answer)
        running = one.levels
        if one.decisions[0].outcome is Outcome.DEDUCTED:
            known[request.flag] = "deducted"
        elif one.returned:
            known[request.flag] = "returned"
        elif one.refused:
            known[request.flag] = "refused"
    assert answers == singles
    assert whole.levels == running


class BatchesOverTime(RuleBasedStateMachine):
    """A stock service's life: batches of deductions and returns, each planned against the
    levels and decisions the earlier ones left (as decide.py writes them), beside the serial
    reference fed the same requests one at a time."""

    def __init__(self) -> None:
        super().__init__()
        self.levels = {g: 5 for g in GOODS}
        self.decided: dict[str, str] = {}
        self.flows: dict[str, dict[str, int]] = {}  # what a return gives back: the flows
        self.restocked = {g: 0 for g in GOODS}
        self.serial = Serial(dict(self.levels))

    @rule(batch=st.lists(st.tuples(st.sampled_from(FLAGS), lines, st.booleans()), max_size=5))
    def serve(self, batch: list[tuple[str, dict[str, int], bool]]) -> None:
        """A cancel (stock_service/deduction/steps.py: cancel) voids a flag with no decision and is
        answered at once; only a deducted flag's return, of exactly its flows, joins a batch."""
        requests = []
        for flag, wanted, is_cancel in batch:
            if not is_cancel:
                requests.append(Request(flag, wanted))
            elif self.decided.get(flag) == "deducted":
                requests.append(Request(flag, self.flows[flag], Kind.RETURN))
            elif flag not in self.decided:
                self.decided[flag] = self.serial.decided[flag] = "voided"
        the_plan, answers = planned(requests, self.levels, self.decided)
        assert answers == [self.serial.apply(r) for r in requests]
        for request, decision in zip(requests, the_plan.decisions, strict=True):
            if decision.outcome is Outcome.DEDUCTED:
                assert self.decided.get(request.flag) is None, "a decided flag deducted again"
                self.decided[request.flag] = "deducted"
                self.flows[request.flag] = dict(request.lines)
        for request in the_plan.returning(requests):
            self.decided[request.flag] = "returned"
        for request, _decision in the_plan.refusing(requests):
            self.decided[request.flag] = "refused"
        self.levels = the_plan.levels

    @rule(goods=st.sampled_from(GOODS), units=st.integers(1, 4))
    def restock(self, goods: str, units: int) -> None:
        """Stock that comes back by other means than a return: an adjustment (a restock),
        planned as the stock service plans it. A refused flag must stay refused (a buyer told
        no is never sold to)."""
        change = Adjustment(goods, "restock", delta=units)
        request = Request(f"adj-{len(self.flows)}-{units}", {goods: 0}, Kind.ADJUST, adjust=change)
        the_plan, answers = planned([request], self.levels, self.decided)
        assert answers == [self.serial.apply(request)]
        assert [e.level_after for e in the_plan.entries] == [self.levels[goods] + units]
        self.levels = the_plan.levels
        self.restocked[goods] += units

    @invariant()
    def levels_agree_and_stock_is_conserved(self) -> None:
        assert self.levels == self.serial.levels
        assert all(v >= 0 for v in self.levels.values())
        held = {g: 0 for g in GOODS}
        for flag, outcome in self.decided.items():
            if outcome == "deducted":
                for goods, num in self.flows[flag].items():
                    held[goods] += num
        assert {g: 5 + self.restocked[g] - self.levels[g] for g in GOODS} == held
        assert self.serial.decided == self.decided  # refusals recorded, as the reference does


BatchesOverTime.TestCase.settings = settings(
    max_examples=100, stateful_step_count=12, deadline=None
)
TestBatchesOverTime = BatchesOverTime.TestCase


# --- the checkers against generated worlds --------------------------------------------------


@dataclass
class World:
    ops: list[Op]
    snap: Snapshot
    initial: dict[str, int]


@st.composite
def worlds(draw: st.DrawFn) -> World:
    """Orders placed one at a time against seeded goods (the serial reference decides them):
    each answered 200 and CONFIRMED with its flows, or 409 and FAILED for lack of stock; some
    of those placed are cancelled, right after or a few orders later (200 CANCELLED, their
    stock back on the shelf, where a later order may take it: stock comes back after the
    refusals made meanwhile)."""
    initial = draw(st.fixed_dictionaries({g: st.integers(0, 6) for g in GOODS}))
    later = st.one_of(st.none(), st.integers(0, 3))  # cancelled after this many more orders
    orders = draw(st.lists(st.tuples(lines, later), min_size=1, max_size=8))
    serial = Serial(dict(initial))
    ops: list[Op] = []
    statuses: dict[str, str] = {}
    order_lines: dict[str, dict[str, int]] = {}
    flows: dict[str, dict[str, int]] = {}
    returns: dict[str, dict[str, int]] = {}
    refused: dict[str, dict[str, int | None]] = {}
    reasons: dict[str, str | None] = {}
    cancels: dict[int, list[str]] = {}  # after order i: the orders cancelled then

    def cancel(order_id: str) -> None:
        wanted = order_lines[order_id]
        assert serial.apply(Request(order_id, wanted, Kind.RETURN))[0] is Outcome.RETURNED
        statuses[order_id], returns[order_id] = "CANCELLED", dict(wanted)
        ops.append(_op(order_id, wanted, 200, "CANCELLED", UNKNOWN, "cancel", "cancel"))

    for i, (wanted, cancel_after) in enumerate(orders):
        order_id = f"o{i}"
        outcome, short, _ = serial.apply(Request(order_id, wanted))
        order_lines[order_id] = wanted
        if outcome is Outcome.DEDUCTED:
            statuses[order_id], flows[order_id] = "CONFIRMED", dict(wanted)
            intent = "none" if cancel_after is None else "cancel"
            ops.append(_op(order_id, wanted, 200, "CONFIRMED", OK, intent=intent))
            if cancel_after is not None:
                cancels.setdefault(i + cancel_after, []).append(order_id)
        else:
            statuses[order_id], reasons[order_id] = "FAILED", REFUSED
            refused[order_id] = {goods: 1 for goods, _, _ in short}
            ops.append(_op(order_id, wanted, 409, "FAILED", FAIL))
        for cancelled in cancels.pop(i, []):
            cancel(cancelled)
    for step in sorted(cancels):
        for cancelled in cancels[step]:
            cancel(cancelled)
    sums = {(g, 1): sum(f.get(g, 0) for f in flows.values()) for g in GOODS}
    snap = Snapshot(
        levels={g: (serial.levels[g], initial[g], 1) for g in GOODS},
        flow_sums=sums,
        duplicate_flows=[],
        flows_by_flag=flows,
        orders=statuses,
        lines=order_lines,
        reasons=reasons,
        refused=refused,
        return_sums={(g, 1): sum(r.get(g, 0) for r in returns.values()) for g in GOODS},
        returns_by_flag=returns,
        decisions={o: "returned" if o in returns else "deducted" for o in flows},
    )
    return World(ops, snap, initial)


def _op(
    order_id: str,
    wanted: dict[str, int],
    status: int,
    told: str,
    outcome: str,
    kind: str = "order",
    intent: str = "none",
) -> Op:
    return Op(
        key=f"k-{order_id}",
        attempt=0,
        double=False,
        lines=wanted,
        invoke=0.0,
        complete=0.1,
        status=status,
        order_id=order_id,
        order_status=told,
        outcome=outcome,
        kind=kind,
        intent=intent,
    )


def verdicts(world: World) -> dict[str, bool]:
    """Each check's name -> whether it found a violation."""
    found = {
        r.invariant + " " + r.name: not r.ok for r in check_invariants(world.snap, world.initial)
    }
    for v in (
        answered_ok_is_confirmed(world.ops, world.snap),
        refused_is_failed(world.ops, world.snap),
        answers_hold(world.ops, world.snap),
        one_order_per_key(world.ops),
    ):
        assert v.verdict in (VALID, VIOLATED)
        found[v.check] = v.verdict == VIOLATED
    return found


@FAST
@given(world=worlds())
def test_a_valid_history_raises_nothing(world: World) -> None:
    assert [name for name, bad in verdicts(world).items() if bad] == []


def _confirmed(world: World) -> list[str]:
    return [o for o, s in world.snap.orders.items() if s == "CONFIRMED"]


def _failed(world: World) -> list[str]:
    return [o for o, s in world.snap.orders.items() if s == "FAILED"]


@FAST
@given(world=worlds(), data=st.data())
def test_each_planted_violation_is_caught(world: World, data: st.DataObject) -> None:
    snap, ops = world.snap, world.ops
    goods = data.draw(st.sampled_from(GOODS))
    num, seeded, version = snap.levels[goods]
    plants = {
        # a lost update: the level says one more unit is left than the flows allow
        "I1 initial - final = flows - returns": replace(
            snap, levels={**snap.levels, goods: (num + 1, seeded, version)}
        ),
        "I1 no negative stock": replace(
            snap,
            levels={**snap.levels, goods: (-1, seeded, version)},
            flow_sums={**snap.flow_sums, (goods, version): seeded + 1},
        ),
        "I2 one flow per (flag, goods id)": replace(snap, duplicate_flows=[("o0", goods, 2)]),
    }
    for name, planted in plants.items():
        assert verdicts(World(ops, planted, world.initial))[name], name
    if _confirmed(world):
        victim = data.draw(st.sampled_from(_confirmed(world)))
        # told 200, yet FAILED at the end (and its stock back): H1, H5 and I3 all see it
        ended_failed = replace(snap, orders={**snap.orders, victim: "FAILED"})
        found = verdicts(World(ops, ended_failed, world.initial))
        assert found["H1"] and found["H5"] and found["I3 orders match flows"]
        # two orders for one key
        twin = replace(ops[0], order_id="o-other")
        assert verdicts(World([*ops, twin], snap, world.initial))["H3"]
    if _failed(world):
        victim = data.draw(st.sampled_from(_failed(world)))
        # told 409, yet a flow was written for it: H2 and I3
        wanted = snap.lines[victim]
        with_flow = replace(snap, flows_by_flag={**snap.flows_by_flag, victim: dict(wanted)})
        found = verdicts(World(ops, with_flow, world.initial))
        assert found["H2"] and found["I3 orders match flows"]
        # refused while the stock was there: a lost sale (I4)
        rich = {g: (lvl + 100, s, v) for g, (lvl, s, v) in snap.levels.items()}
        assert verdicts(World(ops, replace(snap, levels=rich), world.initial))["I4 no lost sale"]


@FAST
@given(world=worlds(), data=st.data())
def test_a_refusal_then_a_deduction_after_a_return_is_caught(
    world: World, data: st.DataObject
) -> None:
    """The late attempt after a refusal, planted in a valid world: an order told 409
    insufficient_stock whose late first attempt deducted once stock came back (a cancel, here).
    The deduction is real (the level goes down by it, its flow is written), so I1 holds; H2, I3
    and I9 must see it, with the decision the rule before refusals were recorded left
    (deducted) and with a recorded refusal that a deduction went past (refused)."""
    snap = world.snap
    fits = [
        o for o in _failed(world) if all(snap.levels[g][0] >= n for g, n in snap.lines[o].items())
    ]
    if not fits:
        return  # no refused order whose stock is on the shelf at the end: nothing to plant
    victim = data.draw(st.sampled_from(fits))
    wanted = snap.lines[victim]
    late = replace(
        snap,
        levels={g: (n - wanted.get(g, 0), s, v) for g, (n, s, v) in snap.levels.items()},
        flow_sums={k: total + wanted.get(k[0], 0) for k, total in snap.flow_sums.items()},
        flows_by_flag={**snap.flows_by_flag, victim: dict(wanted)},
    )
    for decided in ("deducted", "refused"):
        planted = replace(late, decisions={**late.decisions, victim: decided})
        found = verdicts(World(world.ops, planted, world.initial))
        assert found["H2"] and found["I3 orders match flows"], decided
        assert found["I9 a refusal stays a refusal"], decided
        assert not found["I1 initial - final = flows - returns"], decided
        assert not found["I1 no negative stock"], decided


def test_the_generated_worlds_line_up_the_story() -> None:
    """The worlds above reach the story's shape: a refusal, then a cancel that returns stock
    to its goods, with enough on the shelf at the end for the refused order."""
    found = []

    # Derandomized: this asks whether the generator reaches the story at all, and a draw of
    # 300 worlds that happened to miss it failed a run (once in the suite, here); a fixed
    # seed answers the same question every time.
    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(world=worlds())
    def look(world: World) -> None:
        snap = world.snap
        for o in _failed(world):
            after = world.ops[[c.order_id for c in world.ops].index(o) :]
            returned = [c for c in after if c.kind == "cancel"]
            if any(set(c.lines) & set(snap.lines[o]) for c in returned) and all(
                snap.levels[g][0] >= n for g, n in snap.lines[o].items()
            ):
                found.append(o)

    look()
    assert found


# --- adversarial neighbours -----------------------------------------------------------------

MAX_LEVEL = 12  # the cap an adjustment may not take a level past (MAX_STOCK_LEVEL)
LONG_ID = "x" * 64  # an identifier as long as the columns take, with no stock row


@st.composite
def poisoned(draw: st.DrawFn) -> Request:
    """A member that must change nothing and nobody else's answer: an order far beyond any
    level, or of many lines, or of goods with no stock row (a 64-character id); a restock past
    the cap; a compare-and-swap against a level nobody saw; a return of a flag never deducted.
    Each with a flag of its own (an adjustment's id, a buyer's fresh flag)."""
    flag = f"poison-{draw(st.uuids()).hex}"
    kind = draw(st.sampled_from(["huge", "wide", "ghost", "over-cap", "stale", "stray-return"]))
    if kind == "huge":
        return Request(flag, {draw(st.sampled_from(GOODS)): draw(st.integers(100, 10**9))})
    if kind == "wide":  # every goods id, one of them more than can ever be there
        wanted = {g: 1 for g in GOODS} | {draw(st.sampled_from(GOODS)): 10**6}
        return Request(flag, wanted)
    if kind == "ghost":
        return Request(flag, {LONG_ID: 1, draw(st.sampled_from(GOODS)): 1})
    if kind == "stray-return":
        return Request(flag, {draw(st.sampled_from(GOODS)): 1}, Kind.RETURN)
    goods = draw(st.sampled_from(GOODS))
    if kind == "over-cap":
        change = Adjustment(goods, "restock", delta=draw(st.integers(MAX_LEVEL + 1, 10**9)))
    else:
        change = Adjustment(goods, "count", num=1, expected=draw(st.integers(MAX_LEVEL + 1, 99)))
    return Request(flag, {goods: 0}, Kind.ADJUST, adjust=change)


@FAST
@given(requests=requests, levels=levels, decided=decided, data=st.data())
def test_a_neighbour_that_changes_nothing_changes_no_other_answer(
    requests: list[Request], levels: dict[str, int], decided: dict[str, str], data: st.DataObject
) -> None:
    """A batch never decides a member's answer: poisoned and oversized members put anywhere
    among ordinary ones are refused on their own, and every other member gets exactly the
    answer, the ledger lines and the levels it gets in the batch without them."""
    poison = data.draw(st.lists(poisoned(), min_size=1, max_size=4))
    mixed = list(requests)
    for bad in poison:
        mixed.insert(data.draw(st.integers(0, len(mixed))), bad)
    alone = plan(requests, levels, decided, max_level=MAX_LEVEL)
    together = plan(mixed, levels, decided, max_level=MAX_LEVEL)
    bad_flags = {bad.flag for bad in poison}
    kept = [i for i, r in enumerate(mixed) if r.flag not in bad_flags]
    for i in (i for i, r in enumerate(mixed) if r.flag in bad_flags):
        assert together.decisions[i].outcome in (
            Outcome.INSUFFICIENT,
            Outcome.ABOVE_MAX,
            Outcome.STALE,
            Outcome.VOIDED,
        ), mixed[i]
        assert not together.decisions[i].entries
    others = [together.decisions[i] for i in kept]
    assert [(d.outcome, d.shortfalls, d.level) for d in others] == [
        (d.outcome, d.shortfalls, d.level) for d in alone.decisions
    ]
    assert [(e.goods_id, e.kind, e.delta, e.level_after, e.seq) for e in together.entries] == [
        (e.goods_id, e.kind, e.delta, e.level_after, e.seq) for e in alone.entries
    ]
    assert together.levels == alone.levels


@FAST
@given(requests=requests, levels=levels, decided=decided)
def test_no_adjustment_takes_a_level_past_the_cap(
    requests: list[Request], levels: dict[str, int], decided: dict[str, str]
) -> None:
    """Restocks that each fit may not add up past MAX_STOCK_LEVEL: the one that would is
    refused (above_max). Returns may lift a level past the cap (their units are real), and an
    adjustment that lowers such a level is taken: only one that raises is bounded."""
    cap = 9
    start = {g: min(v, cap) for g, v in levels.items()}
    the_plan = plan(requests, start, decided, max_level=cap)
    for entry in the_plan.entries:
        if entry.kind == "adjusted" and entry.delta > 0:
            assert entry.level_after <= cap
